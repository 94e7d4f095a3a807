"""`kep functions`, `kep call` and `kep init` as a user runs them (subprocesses)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import KEP, PYCACHE, kep_env
from tools_testutil import one_def, sh_tool

from tuiapp.settings import paths

GREET = (
    '{"type": "object", "properties": {"who": {"type": "string"}}, '
    '"required": ["who"], "additionalProperties": false}'
)


# Compiled modules kept between kep processes even where PYTHONDONTWRITEBYTECODE is set:
# otherwise every `kep` start here recompiles the whole package.
ENV = kep_env(
    PYTHONDONTWRITEBYTECODE="",
    PYTHONPYCACHEPREFIX=PYCACHE,
)


def kep(
    *argv: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KEP, *argv], input=stdin, capture_output=True, text=True, env=ENV, cwd=cwd, timeout=60
    )


@pytest.fixture
def proj(project: Path, tmp_path: Path) -> Path:
    # (the tool's `ran` mark lands beside the project: writable inside the sandbox too)
    (project / "kep.toml").write_text(f'[tools]\nbuiltins = false\n[sandbox]\n'
                                      f'writable = ["{tmp_path}"]\n')
    fn = project / "prompts" / "functions"
    sh_tool(
        fn / "greet",
        one_def("greet", GREET),
        f'read -r args; touch {tmp_path}/ran; echo "hello $args"; echo "to stderr" >&2',
    )
    sh_tool(fn / "broken", "  echo '{}'")
    sh_tool(fn / "fail", one_def("fail"), 'echo "bad things" >&2; exit 5')
    sh_tool(fn / "slow", one_def("slow"), "echo one; sleep 0.6; echo two")
    return project


def test_functions_table_lists_tools_and_broken_reasons(proj: Path) -> None:
    res = kep("functions", "--project", str(proj))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["NAME", "FORMAT", "SOURCE", "STATUS", "DESCRIPTION"]
    greet = next(line for line in lines if line.startswith("greet "))
    assert greet.split() == ["greet", "keprompt", "prompts/functions/greet", "ok", "greet", "tool"]
    broken = next(line for line in lines if "broken" in line)
    assert "prompts/functions/broken" in broken and "printed an object" in broken
    assert lines[-1] == "3 tools, 1 broken"


def test_functions_json_contract(proj: Path) -> None:
    res = kep("functions", "--json", "--project", str(proj))
    entries = json.loads(res.stdout)
    ok = [e for e in entries if e["status"] == "ok"]
    bad = [e for e in entries if e["status"] == "broken"]
    assert [e["name"] for e in ok] == ["fail", "greet", "slow"]
    assert set(ok[0]) == {"name", "description", "parameters", "format", "source", "status"}
    assert ok[1]["parameters"] == json.loads(GREET)
    assert ok[1]["source"] == str(proj / "prompts" / "functions" / "greet")
    assert len(bad) == 1 and set(bad[0]) == {"source", "format", "status", "error"}


def test_warm_functions_imports_nothing_heavy(proj: Path) -> None:
    kep("functions", "--json", "--project", str(proj))  # fills the declaration cache
    argv = [KEP[0], "-X", "importtime", *KEP[1:], "functions", "--json", "--project", str(proj)]
    res = subprocess.run(argv, capture_output=True, text=True, env=ENV, timeout=60)
    assert res.returncode == 0
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0]
                for line in res.stderr.splitlines() if line.startswith("import time:")}
    assert "tuiapp" in imported
    assert not imported & {"jsonschema", "textual", "openai", "anthropic", "mcp", "pydantic"}


def test_functions_with_a_bad_config_is_a_clean_exit_2(proj: Path) -> None:
    (proj / "kep.toml").write_text("[tools]\ntimeout = -1\n")
    res = kep("functions", "--project", str(proj))
    assert res.returncode == 2 and res.stderr.startswith("kep: ") and "tools.timeout" in res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.slow
def test_call_streams_output_and_returns_the_exit_code(proj: Path, tmp_path: Path) -> None:
    res = kep("call", "greet", '{"who": "ann"}', "--project", str(proj))
    assert (res.returncode, res.stdout, res.stderr) == (0, 'hello {"who": "ann"}\n', "to stderr\n")
    res = kep("call", "greet", "--project", str(proj), stdin='{"who": "bob"}')
    assert res.stdout == 'hello {"who": "bob"}\n'
    res = kep("call", "fail", "--project", str(proj))
    assert (res.returncode, res.stdout, res.stderr) == (5, "", "bad things\n")


def test_call_output_arrives_while_the_tool_runs(proj: Path) -> None:
    proc = subprocess.Popen(
        [*KEP, "call", "slow", "--project", str(proj)], stdout=subprocess.PIPE, text=True, env=ENV
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    t_first = time.monotonic()
    second = proc.stdout.readline()
    assert (first, second) == ("one\n", "two\n")
    assert time.monotonic() - t_first > 0.3  # "one" was printed before "two" existed
    assert proc.wait(10) == 0


@pytest.mark.slow
def test_call_checks_arguments_before_running_anything(proj: Path, tmp_path: Path) -> None:
    res = kep("call", "greet", '{"who": 42}', "--project", str(proj))
    assert res.returncode == 2
    assert (
        res.stderr
        == "kep: invalid arguments for greet: who: 42 is not of type 'string' (nothing was run)\n"
    )
    res = kep("call", "greet", '{"who": "x", "extra": 1}', "--project", str(proj))
    assert res.returncode == 2 and "Additional properties are not allowed" in res.stderr
    res = kep("call", "greet", "{oops", "--project", str(proj))
    assert res.returncode == 2 and "not valid JSON" in res.stderr
    res = kep("call", "greet", "[1]", "--project", str(proj))
    assert res.returncode == 2 and "must be a JSON object" in res.stderr
    assert not (tmp_path / "ran").exists()


def test_call_unknown_tool(proj: Path) -> None:
    res = kep("call", "gret", "--project", str(proj))
    assert res.returncode == 2 and res.stderr.startswith(
        "kep: unknown tool 'gret'; did you mean greet?"
    )


def test_call_obeys_deny_rules(proj: Path, tmp_path: Path) -> None:
    (proj / "kep.toml").write_text(
        '[tools]\nbuiltins = false\n[approval]\ndefault = "ask"\n'
        '[[approval.rules]]\ntool = "greet"\nargs = "mallory"\naction = "deny"\n'
    )
    res = kep("call", "greet", '{"who": "mallory"}', "--project", str(proj))
    assert res.returncode == 1 and "greet denied by kep.toml rule 1" in res.stderr
    assert not (tmp_path / "ran").exists()
    assert (
        kep("call", "greet", '{"who": "ann"}', "--project", str(proj)).returncode == 0
    )  # ask → run


def test_call_json(proj: Path) -> None:
    res = kep("call", "greet", '{"who": "ann"}', "--json", "--project", str(proj))
    out = json.loads(res.stdout)
    assert {k: out[k] for k in ("ok", "exit_code", "stdout", "stderr", "truncated")} == {
        "ok": True,
        "exit_code": 0,
        "stdout": 'hello {"who": "ann"}\n',
        "stderr": "to stderr\n",
        "truncated": False,
    }
    assert isinstance(out["duration_ms"], int)
    out = json.loads(kep("call", "fail", "--json", "--project", str(proj)).stdout)
    assert (out["ok"], out["exit_code"], out["stderr"]) == (False, 5, "bad things\n")


def test_call_timeout_exit_124(proj: Path) -> None:
    (proj / "kep.toml").write_text("[tools]\nbuiltins = false\n[tools.timeouts]\nslow = 0.2\n")
    res = kep("call", "slow", "--project", str(proj))
    assert res.returncode == 124 and "timed out after 0.2 s" in res.stderr


def test_init_copies_builtins_keeping_exec_bits_and_never_overwrites(tmp_path: Path) -> None:
    res = kep("init", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    fn = tmp_path / "prompts" / "functions"
    shipped = sorted(
        p.name
        for p in paths.builtin_functions_dir().iterdir()
        if p.is_file() and not p.name.startswith(".")
    )
    assert sorted(p.name for p in fn.iterdir()) == shipped
    for name in shipped:
        assert os.access(fn / name, os.X_OK) == os.access(
            paths.builtin_functions_dir() / name, os.X_OK
        )
    (fn / "files").write_text("#!/bin/sh\n# my edit\n")
    res = kep("init", "--project", str(tmp_path))
    assert res.returncode == 0 and "kept" in res.stdout and "--force" in res.stderr
    assert (fn / "files").read_text() == "#!/bin/sh\n# my edit\n"
    res = kep("init", "--force", "--project", str(tmp_path))
    assert "replaced" in res.stdout
    assert (fn / "files").read_bytes() == (paths.builtin_functions_dir() / "files").read_bytes()


@pytest.mark.slow
def test_initialised_copies_run_and_override_the_builtins(tmp_path: Path) -> None:
    kep("init", cwd=tmp_path)
    (tmp_path / "notes.txt").write_text("from the project\n")
    entries = json.loads(kep("functions", "--json", "--project", str(tmp_path)).stdout)
    readfile = next(e for e in entries if e.get("name") == "readfile")
    assert readfile["source"] == str(tmp_path / "prompts" / "functions" / "files")
    assert all(e["status"] == "ok" for e in entries)  # the copies shadow the built-ins quietly
    res = kep("call", "readfile", '{"filename": "notes.txt"}', "--project", str(tmp_path))
    assert (res.returncode, res.stdout) == (0, "from the project\n")
    res = kep("call", "readfile", '{"filename": "../outside"}', "--project", str(tmp_path))
    assert res.returncode == 1 and "outside the project root" in res.stderr


def test_call_takes_words_as_the_offline_model_does(proj: Path, tmp_path: Path) -> None:
    res = kep("call", "greet", "ann", "--project", str(proj))
    assert (res.returncode, res.stdout) == (0, 'hello {"who": "ann"}\n'), res.stderr
    res = kep("call", "greet", "who=bob\tsmith", "--project", str(proj))
    # A tab inside one word stays in that value (dash's echo prints the escape as a tab).
    assert res.returncode == 0 and res.stdout.startswith('hello {"who": "bob')
    assert "smith" in res.stdout
    res = kep("call", "greet", "ann", "lee", "--project", str(proj))
    assert res.stdout == 'hello {"who": "ann lee"}\n'  # the last parameter takes the rest
    (tmp_path / "ran").unlink()
    res = kep("call", "greet", "who=x", "extra=1", "--project", str(proj))
    assert res.returncode == 2 and "unknown parameter 'extra'" in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "ran").exists()
