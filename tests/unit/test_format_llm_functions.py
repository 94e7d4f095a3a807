"""llm-functions / AIChat tools (FORMATS.md §2): declarations from argc tags, Python and JSDoc
(golden JSON), the compat switch, broken files with their reasons, and real calls without argc
or jq: bash sourced with argc_* variables, Python and JS through the child runners, AIChat's
built functions.json + bin/, agents, $LLM_OUTPUT, .env."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from formats_util import (
    by_name,
    copy_fixture,
    declarations,
    declare_all,
    golden,
    make_config,
    make_ctx,
    run_call,
)

from tuiapp.settings import config
from tuiapp.tools.formats import argc_tags
from tuiapp.tools.formats.llm_functions import LlmFunctionsFormat

FMT = LlmFunctionsFormat()
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return copy_fixture("llm_functions", tmp_path)


async def test_declarations_match_golden(root: Path) -> None:
    found = await declare_all(FMT, make_ctx(root))
    assert declarations(found) == golden("llm_functions/golden.json")


async def test_compat_switch_reproduces_the_original_quirks(root: Path) -> None:
    cfg = config.parse({"tools": {"llm_functions_compat": True}}, "kep.toml", root)
    assert cfg.tools.llm_functions_compat is True
    ctx = make_ctx(root, {"llm_functions_compat": True})
    got = declarations(await declare_all(FMT, ctx))
    want = golden("llm_functions/golden.json")
    # Python: a default does not make a parameter optional (only Optional[...] does) …
    assert got["get_weather"]["parameters"]["required"] == [
        *want["get_weather"]["parameters"]["required"], "limit"]
    # … and JS enum values are lower-cased with the type.
    unit = got["js_weather"]["parameters"]["properties"]["unit"]
    assert unit["enum"] == ["celsius", "fahrenheit"]
    for name in ("get_weather", "js_weather"):
        got.pop(name), want.pop(name)
    assert got == want


async def test_helpers_and_foreign_agents_are_not_tools(root: Path) -> None:
    found = await declare_all(FMT, make_ctx(root))
    assert found["tools/helper_lib.sh"] == []
    assert found["tools/not_a_tool.py"] == []
    assert not any("notanagent" in p for p in found)  # no index.yaml: not an llm-functions agent
    agents = {s.run.get("agent") for s in by_name(found).values()}
    assert agents == {None, "todo", "pyagent", "jsagent"}


async def test_required_env_is_met_by_the_environment_or_dotenv(root: Path) -> None:
    path = root / "tools" / "needs_env.sh"
    ctx = make_ctx(root)
    salt_before = FMT.cache_salt(path, ctx)
    ctx_set = make_ctx(root, env={**os.environ, "KEP_FIXTURE_TOKEN": "t0ken"})
    assert FMT.cache_salt(path, ctx_set) != salt_before  # so the registry re-checks
    [spec] = await FMT.declare(path, ctx_set)
    assert spec.name == "needs_env"
    (root / ".env").write_text("KEP_FIXTURE_TOKEN=from-dotenv\n")
    assert FMT.cache_salt(path, ctx) != salt_before
    [spec] = await FMT.declare(path, ctx)
    ran = await run_call(FMT, spec, {}, root)
    assert ran.result == "token=from-dotenv"


async def test_require_tools_follows_path(root: Path, tmp_path: Path) -> None:
    path = root / "tools" / "needs_binary.sh"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    prog = bindir / "kep-no-such-program-xyz"
    prog.write_text("#!/bin/sh\n")
    prog.chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    ctx = make_ctx(root, env=env)
    assert FMT.cache_salt(path, ctx) != FMT.cache_salt(path, make_ctx(root))
    [spec] = await FMT.declare(path, ctx)
    assert spec.name == "needs_binary"


# ---- bash, without argc --------------------------------------------------------------------

async def test_bash_tool_gets_argc_variables_env_and_dotenv(root: Path) -> None:
    specs = by_name(await declare_all(FMT, make_ctx(root)))
    nasty = "it's $(echo injected) `x` \"q\"\nline2"
    ran = await run_call(FMT, specs["all_tags"], {
        "text": nasty, "max_count": 3, "ratio": 0.5, "tags": ["a b", "c"], "paths": ["/tmp/x"],
        "kind": "b", "verbose": True, "dry_run": False,
    }, root)
    assert ran.status == "ok", ran.result
    lines = ran.result.split("\n")
    assert lines[:2] == ["text=it's $(echo injected) `x` \"q\"", "line2"]  # literal, not run
    assert lines[2:] == [
        "max_count=3", "ratio=0.5", "tags=a b c (2)", "paths=/tmp/x", "mode=",
        "level=low",  # [=low|high]: the default when not given
        "greeting=hello",  # =hello
        "kind=b", "verbose=1", "dry_run=unset",  # a flag is 1, or unset when false
        "REGION=from-dotenv-region",  # .env before the @env default
        f"LLM_ROOT_DIR={root}", "LLM_TOOL_NAME=all_tags",
        f"LLM_TOOL_CACHE_DIR={root / 'cache' / 'all_tags'}",
        "FIXTURE_DOTENV=from-dotenv", "script=all_tags.sh",
    ]
    assert "progress on stdout" in ran.output()  # streamed to the pane …
    assert "progress" not in ran.result  # … but the model gets $LLM_OUTPUT


async def test_set_variables_win_over_dotenv(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REGION", "from-environment")
    monkeypatch.setenv("FIXTURE_DOTENV", "from-environment-too")
    specs = by_name(await declare_all(FMT, make_ctx(root)))
    ran = await run_call(FMT, specs["all_tags"], {"text": "t", "paths": ["p"], "kind": "a"}, root)
    assert "REGION=from-environment" in ran.result.split("\n")
    assert "FIXTURE_DOTENV=from-environment-too" in ran.result.split("\n")


async def test_result_is_llm_output_else_stdout_else_done(root: Path) -> None:
    specs = by_name(await declare_all(FMT, make_ctx(root)))
    ran = await run_call(FMT, specs["echo_stdout"], {"message": "hi"}, root)
    assert (ran.status, ran.result) == ("ok", "said: hi")
    ran = await run_call(FMT, specs["silent"], {}, root)
    assert (ran.status, ran.result) == ("ok", "DONE")


async def test_failing_bash_tool_reports_exit_code_and_stderr(root: Path) -> None:
    specs = by_name(await declare_all(FMT, make_ctx(root)))
    ran = await run_call(FMT, specs["fails"], {}, root)
    assert (ran.status, ran.exit_code) == ("failed", 3)
    assert "no such thing" in ran.result


def test_prelude_sets_arrays_flags_and_defaults() -> None:
    script = argc_tags.parse("# @describe d\n# @option --x-y*\n# @flag --f\n# @option --o=dflt\n")
    text = argc_tags.prelude(script.root, {"x_y": ["1", "two words"], "f": True}, {})
    assert "argc_x_y=(1 'two words')" in text
    assert "argc_f=1" in text
    assert "argc_o=dflt" in text


# ---- Python and JavaScript -----------------------------------------------------------------

async def test_python_tool_returns_json_with_its_env(root: Path) -> None:
    specs = by_name(await declare_all(FMT, make_ctx(root)))
    ran = await run_call(FMT, specs["get_weather"], {
        "location": "Paris", "unit": "Celsius", "days": 2, "threshold": 1.5, "verbose": False,
        "tags": ["x"]}, root)
    assert ran.status == "ok", ran.result
    assert json.loads(ran.result) == {
        "location": "Paris", "unit": "Celsius", "days": 2, "tags": ["x"], "note": None,
        "limit": 3, "tool": "get_weather", "cache": str(root / "cache" / "get_weather")}


async def test_python_tool_streams_stdout_and_uses_default_interpreter(root: Path) -> None:
    specs = by_name(await declare_all(FMT, make_ctx(root)))
    cfg = config.parse({}, "test", root)  # no [tools] python: python3 on PATH, as the original
    ran = await run_call(FMT, specs["doc_types"], {"name": "n", "count": 2}, root, cfg)
    assert (ran.status, ran.result) == ("ok", "n:2:False")
    assert "streamed line" in ran.output()


async def test_python_tool_exception_is_a_failure_with_traceback(root: Path) -> None:
    specs = by_name(await declare_all(FMT, make_ctx(root)))
    ran = await run_call(FMT, specs["py_raises"], {"x": "this"}, root)
    assert ran.status == "failed"
    assert "RuntimeError: cannot handle this" in ran.result


@needs_node
async def test_js_tool_is_called_with_its_arguments(root: Path) -> None:
    specs = by_name(await declare_all(FMT, make_ctx(root)))
    args = {"location": "Oslo", "days": 1, "tags": []}
    ran = await run_call(FMT, specs["js_weather"], args, root)
    assert ran.status == "ok", ran.result
    assert json.loads(ran.result) == {"location": "Oslo", "unit": None, "days": 1, "tags": [],
                                      "tool": "js_weather"}


async def test_js_tool_without_node_is_broken(root: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty-path"
    empty.mkdir()
    ctx = make_ctx(root, env={**os.environ, "PATH": str(empty)})
    found = await declare_all(FMT, ctx)
    assert found["tools/js_weather.js"] == (
        "BROKEN: JavaScript tools need Node.js: node is not on PATH")


# ---- agents ----------------------------------------------------------------------------------

async def test_bash_agent_function_gets_agent_env_and_variables(root: Path) -> None:
    specs = by_name(await declare_all(FMT, make_ctx(root)))
    ran = await run_call(FMT, specs["add_todo"], {"desc": "milk"}, root)
    assert ran.status == "ok", ran.result
    agent_dir = root / "agents" / "todo"
    assert ran.result == (f"added milk to groceries (todo/add_todo)\n"
                          f"root={agent_dir} cache={root / 'cache' / 'todo'}")
    ran = await run_call(FMT, specs["list_todos"], {"all": True}, root)
    assert ran.result == "all=1"


async def test_python_and_js_agent_functions(root: Path) -> None:
    specs = by_name(await declare_all(FMT, make_ctx(root)))
    ran = await run_call(FMT, specs["greet"], {"name": "bob", "times": 2}, root)
    assert ran.result == "hi hi bob"
    if shutil.which("node"):
        ran = await run_call(FMT, specs["add"], {"a": 1, "b": 2}, root)
        assert (ran.status, ran.result) == ("ok", "3")


# ---- AIChat's built functions_dir ---------------------------------------------------------

async def test_built_functions_dir_is_consumed_as_is(tmp_path: Path) -> None:
    built = copy_fixture("aichat_functions", tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    cfg_tools = {"sources": [{"format": "llm-functions", "path": str(built)}]}
    ctx = make_ctx(project, cfg_tools)
    found = await declare_all(FMT, ctx)
    assert declarations(found) == golden("aichat_functions/golden.json")
    specs = by_name(found)
    assert specs["shadowed"].source.endswith("tools/shadowed.sh")  # the source wins
    cfg = make_config(project, cfg_tools)
    ran = await run_call(FMT, specs["hello"], {"name": "x"}, project, cfg)
    assert ran.result == 'argv1={"name": "x"} tool=hello root=aichat_functions'
    ran = await run_call(FMT, specs["lookup"], {"q": "w"}, project, cfg)
    assert ran.result == 'agent=helper func=lookup data={"q": "w"}'
    ran = await run_call(FMT, specs["shadowed"], {}, project, cfg)
    assert ran.result == "from source"
    assert specs["everything_echo"].run["mcp"] == "everything"


async def test_functions_json_without_bin_is_broken(tmp_path: Path) -> None:
    built = copy_fixture("aichat_functions", tmp_path)
    shutil.rmtree(built / "bin")
    found = await declare_all(FMT, make_ctx(built))
    assert found["functions.json"].startswith("BROKEN: functions.json without")



async def test_unreadable_sources_are_broken_with_a_reason(root: Path) -> None:
    (root / "tools" / "syntax.py").write_text("def run(x: str:\n    pass\n")
    (root / "tools" / "nodoc.js").write_text("exports.run = function run(args) { return 1; };\n")
    found = await declare_all(FMT, make_ctx(root))
    assert found["tools/syntax.py"].startswith("BROKEN: Python syntax error at line 1")
    assert found["tools/nodoc.js"] == (
        "BROKEN: `run` has no JSDoc comment (/** … @property … */) above it")


def test_argc_escaped_at_sign_is_unescaped_in_descriptions() -> None:
    """llm-functions' fs_patch writes `# \\@@ ... @@` so argc does not read a tag there; the
    model must see the patch example as `@@ ... @@`, as argc shows it."""
    from tuiapp.tools.formats import argc_tags

    script = argc_tags.parse(
        "# @describe Apply a patch.\n"
        "# @option --contents! The patch to apply\n"
        "# --- a/hello.py\n"
        "# \\@@ ... @@\n"
        "#  def hello():\n"
        "# \\@notatag either\n"
        "main() { :; }\n"
    )
    (param,) = [p for p in script.root.params if p.prop == "contents"]
    lines = param.description.split("\n")
    assert "@@ ... @@" in lines and "@notatag either" in lines
    assert not any(line.startswith("\\@") for line in lines)
