"""Every malformed input is one clear line naming file and key or position; exit 2 from a
headless command; no traceback; the last good state stays in force."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from conftest import KEP, kep_env
from test_hot_reload import WAIT, WatchProcess
from test_hot_reload import make_project as watch_project
from tools_testutil import make_config, one_def, sh_tool

from tuiapp.settings import config, config_reader, paths
from tuiapp.settings.config_types import ConfigError
from tuiapp.tools.registry import Registry
from tuiapp.tools.schema import arguments_error, schema_error
from tuiapp.vocab.messages import ToolCall


def kep(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # The environment is read now: each test has its own config dir.
    return subprocess.run([*KEP, *argv], capture_output=True, text=True, env=kep_env(),
                          cwd=cwd, timeout=60)


def one_clean_line(res: object, *needles: str) -> str:
    out = res.stderr  # type: ignore[attr-defined]
    assert res.returncode == 2, (res.returncode, out)  # type: ignore[attr-defined]
    assert "Traceback" not in out and out.count("\n") == 1, out
    for n in needles:
        assert n in out, out
    return out


@pytest.fixture
def proj(project: Path) -> Path:
    (project / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    return project


def test_invalid_utf8_in_kep_toml(proj: Path) -> None:
    (proj / "kep.toml").write_bytes(b'[tools]\nbuiltins = false\nmodel = "caf\xe9"\n')
    one_clean_line(kep("functions", cwd=proj), "kep.toml", "not valid UTF-8 at line 3, column 13")


def test_invalid_utf8_in_the_user_config(proj: Path) -> None:
    user = paths.user_config_file()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_bytes(b"\xff\xfe theme = 1\n")
    one_clean_line(kep("functions", cwd=proj), str(user), "not valid UTF-8 at line 1")


def test_invalid_utf8_in_dotenv(proj: Path) -> None:
    (proj / ".env").write_bytes(b"GOOD=1\nBAD=\x80\x81\n")
    one_clean_line(kep("functions", cwd=proj), ".env", "not valid UTF-8 at line 2")


@pytest.mark.parametrize(
    "text,key",
    [("max_steps = inf\n", "max_steps"), ("max_steps = -inf\n", "max_steps"),
     ("[tools]\ntimeout = nan\n", "tools.timeout"), ("[tools.timeouts]\nx = inf\n",
                                                     "tools.timeouts.x"),
     ("[ui]\npane_lines = +nan\n", "ui.pane_lines")],
)
def test_inf_and_nan_numbers(proj: Path, text: str, key: str) -> None:
    (proj / "kep.toml").write_text(text)
    one_clean_line(kep("functions", cwd=proj), f"kep.toml: {key}: ")


@pytest.mark.parametrize("nest", ["[", "{a="])
def test_3000_deep_nesting(proj: Path, nest: str) -> None:
    close = {"[": "]", "{a=": "}"}[nest]
    (proj / "kep.toml").write_text("x = " + nest * 3000 + "1" + close * 3000 + "\n")
    one_clean_line(kep("functions", cwd=proj), "kep.toml", "nested too deeply")


def test_deep_dotted_tables_are_refused_without_recursion(tmp_path: Path) -> None:
    f = tmp_path / "kep.toml"
    f.write_text("[" + ".".join(["a"] * 3000) + "]\n")
    with pytest.raises(ConfigError) as e:
        config_reader.read_toml(f)
    assert "nested too deeply" in e.value.message


def test_a_bad_base_url_is_one_line_from_kep_run(proj: Path) -> None:
    (proj / "kep.toml").write_text('[providers.x]\napi = "chat"\nbase_url = "http://[::1"\n')
    one_clean_line(kep("run", "-m", "x/m", "hi", cwd=proj), "providers.x.base_url", "[::1")


@pytest.mark.parametrize("url", ["http://h:99999/v1", "localhost:8080", "http://exa mple/v1",
                                 "ftp://h/v1", "http://"])
def test_other_bad_base_urls(tmp_path: Path, url: str) -> None:
    with pytest.raises(ConfigError) as e:
        config.parse({"providers": {"x": {"api": "chat", "base_url": url}}}, "k.toml", tmp_path)
    assert e.value.key == "providers.x.base_url"


def test_a_binary_theme_file_is_reported_not_fatal() -> None:
    from tuiapp.ui.themes import load_themes

    d = paths.user_themes_dir()
    d.mkdir(parents=True, exist_ok=True)
    (d / "junk.toml").write_bytes(bytes(range(256)) * 4)
    themes, errors = load_themes()
    assert {"dark", "light"} <= {t.name for t in themes}
    assert len(errors) == 1 and "junk.toml" in errors[0] and "not valid UTF-8" in errors[0]


# ---- tool schemas whose $ref kep cannot use ------------------------------------------------

SELF_REF = '{"type": "object", "$ref": "#"}'
DANGLING = '{"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}}'
LOOP = ('{"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": '
        '{"x": {"anyOf": [{"$ref": "#/$defs/y"}]}, "y": {"$ref": "#/$defs/x"}}}')
TREE = ('{"type": "object", "properties": {"root": {"$ref": "#/$defs/n"}}, "$defs": {"n": '
        '{"type": "object", "properties": {"kids": {"type": "array", "items": '
        '{"$ref": "#/$defs/n"}}}}}}')


@pytest.mark.parametrize("schema,why", [(SELF_REF, "loop"), (DANGLING, "dangling"),
                                        (LOOP, "loop")])
async def test_a_bad_ref_makes_the_tool_broken_at_discovery(tmp_path: Path, schema: str,
                                                           why: str) -> None:
    fn = tmp_path / "prompts" / "functions"
    sh_tool(fn / "bad", one_def("bad", schema))
    sh_tool(fn / "tree", one_def("tree", TREE))
    reg = Registry(make_config(tmp_path))
    await reg.refresh()
    assert sorted(reg.tools) == ["tree"]  # a recursive schema that descends is fine
    (broken,) = reg.broken
    assert broken.source.endswith("bad") and why in broken.error and "$ref" in broken.error


def test_kep_functions_and_call_with_a_self_ref_tool(proj: Path) -> None:
    sh_tool(proj / "prompts" / "functions" / "bad", one_def("bad", SELF_REF), "echo ran")
    res = kep("functions", "--json", cwd=proj)
    assert res.returncode == 0 and "Traceback" not in res.stderr
    (entry,) = json.loads(res.stdout)
    assert entry["status"] == "broken" and "$ref" in entry["error"]
    res = kep("call", "bad", "{}", cwd=proj)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "bad is broken" in res.stderr and "$ref '#'" in res.stderr


@pytest.mark.parametrize("schema", [SELF_REF, DANGLING, LOOP])
def test_checking_arguments_against_a_bad_schema_is_an_answer_not_a_crash(schema: str) -> None:
    problem = arguments_error(json.loads(schema), {"a": 1})
    assert problem and "schema" in problem
    assert schema_error(json.loads(schema))


async def test_a_call_to_a_tool_with_a_bad_schema_is_refused_not_stuck() -> None:
    from test_conversation import Recorder, Scripted, conv

    from tuiapp.providers.base import StreamEnd
    from tuiapp.vocab.tool_specs import ToolSpec

    bad = ToolSpec("echo", "e", json.loads(SELF_REF), "keprompt", "/x")
    p = Scripted([ToolCall("c1", "echo", {}), StreamEnd("tool_use")], [StreamEnd("end_turn")])
    rec = Recorder()
    c = conv(p, rec)
    c.tools = lambda: {"echo": bad}
    assert await c.turn("x") == "end_turn"
    (result,) = [m for m in c.history if m.role == "tool"]
    assert result.is_error and "schema" in result.content and rec.ran == []


# ---- a live edit ---------------------------------------------------------------------------

@pytest.mark.slow
def test_functions_watch_survives_a_live_max_steps_inf_edit(project: Path) -> None:
    root = watch_project(project)
    watch = WatchProcess(root)
    try:
        assert watch.next_event(time.monotonic() + WAIT)["ready"] is True
        (root / "kep.toml").write_text("[tools]\nbuiltins = false\nmax_steps = 3\n")
        (root / "kep.toml").write_text("max_steps = inf\n[tools]\nbuiltins = false\n")
        ev = watch.next_event(time.monotonic() + WAIT)
        while "config_error" not in ev:
            ev = watch.next_event(time.monotonic() + WAIT)
        assert ev["config_error"] == f"{root / 'kep.toml'}: max_steps: expected a finite " \
            "number, got inf"
        (root / "kep.toml").write_text('[tools]\nbuiltins = false\ndirs = ["more/tools"]\n')
        assert watch.next_event(time.monotonic() + WAIT) == {"config": "reloaded"}
    finally:
        code = watch.stop()
    assert code == 0 and "Traceback" not in watch.stderr()
