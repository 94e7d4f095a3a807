"""Every seed format in one project, through the real registry, runner, `kep functions`,
`kep call`, `kep run` (offline model and the fake LLM server), and hot reload of each format
via the registry's incremental refresh(paths)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import KEP, kep_env
from fakes.llm_server import FakeLLMServer
from formats_util import FIXTURES
from test_format_extensions import LIGHT_SCHEMA
from test_format_loki import TSX

from tuiapp.project import config as project_config
from tuiapp.tools.registry import Registry
from tuiapp.vocab.tool_specs import FORMATS

# A few kep subprocesses, each importing its tools; the module-scoped fixture is built once:
# the module's tests share a parallel worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("format_integration")]


def build_project(dest: Path, ts_runtime: str | None = TSX) -> Path:
    """One project holding a tool of every seed format (llm-functions, Loki, extension packs,
    AITool classes), from the fixtures."""
    root = dest / "proj"
    (root / "prompts" / "functions").mkdir(parents=True)
    for part in ("tools", "agents", ".env"):
        src = FIXTURES / "llm_functions" / part
        if src.is_dir():
            shutil.copytree(src, root / part)
        else:
            shutil.copy2(src, root / part)
    shutil.copytree(FIXTURES / "loki" / "functions", root / "functions")
    shutil.copytree(FIXTURES / "extensions" / "extensions", root / "extensions")
    shutil.copytree(FIXTURES / "aitool" / "mytools", root / "mytools")
    ts = f'ts_runtime = "{ts_runtime}"\n' if ts_runtime else ""
    (root / "kep.toml").write_text(
        f'[tools]\nbuiltins = false\npython = "{sys.executable}"\n{ts}'
        '[[tools.sources]]\nformat = "aitool"\npath = "mytools"\n')
    return root


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_project(tmp_path_factory.mktemp("all-formats"))


def kep(root: Path, *args: str, env: dict[str, str] | None = None,
        stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = env or kep_env()
    # One declaration cache for the module's project: later runs take the warm path.
    env["KEP_CACHE_DIR"] = str(root.parent / "kep-cache")
    return subprocess.run([*KEP, *args], cwd=root, env=env, input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_kep_functions_shows_each_format(project: Path) -> None:
    res = kep(project, "functions", "--json")
    assert res.returncode == 0, res.stderr
    entries = json.loads(res.stdout)
    formats = {e["name"]: e["format"] for e in entries if e["status"] == "ok"}
    assert {formats[n] for n in ("all_tags", "get_weather", "js_weather", "add_todo")} == {
        "llm-functions"}
    assert {formats[n] for n in ("demo_py", "demo_sh", "shebang_py")} == {"loki"}
    assert formats["NOTES_GET_projects"] == formats["WEATHER_GET_now"] == "extension"
    assert formats["calc"] == formats["read_file"] == "aitool"
    assert {e["format"] for e in entries} <= set(FORMATS)
    broken = {e["source"]: e["error"] for e in entries if e["status"] == "broken"}
    assert broken[str(project / "tools/needs_env.sh")].startswith("needs environment variable")
    assert "ModuleNotFoundError" in broken[str(project / "extensions/broken/broken_tool.py")]


def test_kep_functions_light_schema(project: Path) -> None:
    res = kep(project, "functions", "--light-schema")
    assert res.returncode == 0, res.stderr
    assert res.stdout == LIGHT_SCHEMA + "\n"


def test_kep_call_runs_every_format(project: Path) -> None:
    res = kep(project, "call", "all_tags", '{"text": "hi", "paths": ["p"], "kind": "a"}')
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("progress on stdout\ntext=hi\n")  # stdout, then $LLM_OUTPUT
    res = kep(project, "call", "--json", "demo_sh", '{"name": "ann", "loud": true}')
    assert json.loads(res.stdout)["result"] == "HELLO ANN X1"
    res = kep(project, "call", "NOTES_GET_projects", stdin='{"limit": 1}')
    assert json.loads(res.stdout) == {"projects": ["Eco AI"], "tags": None}
    res = kep(project, "call", "calc", '{"op": "div", "a": 1, "b": 4}')
    assert (res.returncode, res.stdout) == (0, '{"result": 0.25}')
    res = kep(project, "call", "calc", '{"op": "div", "a": 1, "b": 0}')  # {"error": …}
    assert res.returncode == 1
    assert "division by zero" in res.stderr
    res = kep(project, "call", "calc", '{"op": "mul", "a": 1, "b": 2}')  # jsonschema, kep side
    assert res.returncode == 2
    assert "invalid arguments for calc" in res.stderr and "nothing was run" in res.stderr
    if TSX:
        res = kep(project, "call", "--json", "demo_ts", json.dumps({
            "string": "s", "string_enum": "foo", "boolean": True, "number": 1,
            "array_bracket": [], "array_generic": []}))
        assert json.loads(res.stdout)["result"].startswith("string=s\nstring_enum=foo\n")


def test_offline_model_turns_a_message_into_a_real_call(project: Path) -> None:
    res = kep(project, "run", "--model", "offline", "--yes", "--json", "demo_sh bob count=2")
    assert res.returncode == 0, res.stderr
    events = [json.loads(line) for line in res.stdout.splitlines()]
    finished = [e for e in events if e["type"] == "ToolFinished"]
    assert [(e["status"], e["result"]) for e in finished] == [("ok", "hello bob x2")]


def test_conversation_loop_with_the_fake_llm_server(project: Path) -> None:
    calls = [
        {"name": "get_weather", "arguments": {"location": "Oslo", "unit": "Celsius", "days": 1,
                                              "threshold": 0, "verbose": False, "tags": []}},
        {"name": "demo_py", "arguments": {"string": "s", "string_enum": "bar", "boolean": True,
                                          "integer": 1, "number": 2, "array": []}},
        {"name": "NOTES_UPDATE_project_note", "arguments": {"project_id": "kep", "content": "x"}},
        {"name": "calc", "arguments": {"op": "div", "a": 1, "b": 0}},
    ]
    with FakeLLMServer([{"tool_calls": calls}, {"text": "all done"}]) as server:
        (project / "kep.toml").write_text(
            (project / "kep.toml").read_text() + f'[providers.fake]\napi = "chat"\n'
            f'base_url = "{server.base_url}"\napi_key_env = "FAKE_KEY"\n')
        try:
            res = kep(project, "run", "--model", "fake/m", "--yes", "--json", "go",
                      env=kep_env(FAKE_KEY="k"))
        finally:
            text = (project / "kep.toml").read_text()
            (project / "kep.toml").write_text(text[: text.index("[providers.fake]")])
    assert res.returncode == 1, res.stderr  # one tool failed (calc's {"error"}): `kep run` says so
    assert '"text": "all done"' in res.stdout or "all done" in res.stdout  # the turn went on
    sent = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    results = [m["content"] for m in sent]
    assert json.loads(results[0])["location"] == "Oslo"  # llm-functions Python, via $LLM_OUTPUT
    assert results[1].startswith("string=s\nstring_enum=bar\n")  # Loki Python's return value
    assert json.loads(results[2]) == {"project_id": "kep", "appended": True, "priority": "low"}
    assert "division by zero" in results[3]  # an AITool {"error"} goes back as an error result
    tools_offered = {t["function"]["name"] for t in server.requests[0].body["tools"]}
    assert {"all_tags", "demo_py", "NOTES_GET_projects", "calc"} <= tools_offered


def test_system_prompt_gets_packs_and_aitool_instructions(project: Path) -> None:
    res = kep(project, "run", "--show-system")
    assert res.returncode == 0, res.stderr
    assert "## Notes\n\nManage project notes and milestones." in res.stdout
    assert "## calc\n\nUse calc for arithmetic." in res.stdout


# ---- hot reload: edit, refresh(paths), see the diff --------------------------------------

EDITS: list[tuple[str, str, str, str]] = [
    # (file, tool, old text, new text) — each edit changes the tool's description
    ("tools/all_tags.sh", "all_tags", "Exercise every argc tag", "Exercise each argc tag"),
    ("tools/get_weather.py", "get_weather", "Get the current weather", "Get the weather now"),
    ("tools/js_weather.js", "js_weather", "Get the weather, from", "Weather, from"),
    ("agents/todo/tools.sh", "add_todo", "Add a new todo item.", "Add one todo item."),
    ("functions/tools/demo_py.py", "demo_py", "Show every supported", "Show all supported"),
    ("functions/tools/demo_ts.ts", "demo_ts", "Show every supported", "Show all supported"),
    ("functions/tools/demo_sh.sh", "demo_sh", "Show the Bash", "Show Bash"),
    ("extensions/plain/weather_tool.py", "WEATHER_GET_now", "Current weather", "Weather now"),
    ("mytools/calc_tool.py", "calc", "Add or divide", "Add or split"),
]


async def test_every_format_hot_reloads(tmp_path: Path) -> None:
    root = build_project(tmp_path, TSX or sys.executable)  # any runtime: only declared here
    registry = Registry(project_config.load(root))
    await registry.refresh()
    for file, tool, old, new in EDITS:
        path = root / file
        before = registry.tools[tool].description
        path.write_text(path.read_text().replace(old, new))
        diff = await registry.refresh([path])
        assert tool in diff.changed, (file, diff)
        assert registry.tools[tool].description == before.replace(old, new), file

    # broken, then fixed again: reported, then recovered; other tools unaffected
    path = root / "extensions/plain/weather_tool.py"
    good = path.read_text()
    path.write_text("import kep_missing_module_xyz\n" + good)
    diff = await registry.refresh([path])
    assert str(path) in diff.broken and "WEATHER_GET_now" in diff.removed
    assert "NOTES_GET_projects" in registry.tools
    path.write_text(good)
    diff = await registry.refresh([path])
    assert str(path) in diff.recovered and "WEATHER_GET_now" in diff.added

    # a new file in each format's root is added; a deleted one removed
    added = {
        "tools/new_bash.sh": ("new_bash", "#!/usr/bin/env bash\n# @describe New.\nmain() { :; }\n"),
        "functions/tools/new_loki.py": ("new_loki", 'def run(x: str):\n    """New.\n\n    Args:\n'
                                                    '        x: X\n    """\n    return x\n'),
        "extensions/new/new_tool.py": ("NEW_do", 'NAME = "New"\nSYSTEM_PROMPT = "n"\n'
                                                 'def NEW_do():\n    """New."""\n'
                                                 "TOOLS = [NEW_do]\n"),
        "mytools/new_tool.py": ("new_ait", "class NewTool:\n    name = 'new_ait'\n"
                                           "    description = 'New.'\n"
                                           "    parameters_schema = {'type': 'object'}\n"
                                           "    def execute(self, **kw):\n        return 'n'\n"),
    }
    for file, (_, text) in added.items():
        (root / file).parent.mkdir(parents=True, exist_ok=True)
        (root / file).write_text(text)
    diff = await registry.refresh([root / f for f in added])
    assert set(diff.added) == {name for name, _ in added.values()}
    for file in added:
        (root / file).unlink()
    diff = await registry.refresh([root / f for f in added])
    assert set(diff.removed) == {name for name, _ in added.values()}

