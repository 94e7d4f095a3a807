"""Loki custom tools (FORMATS.md §3): Python `run` + Args:, TypeScript `export function run` +
JSDoc, Bash argc tags; rejected forms broken with a reason; #! overrides the runtime; node
absent → broken, not a crash; real calls (TypeScript with tsx where it is installed)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import PEERS_DIR
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

from tuiapp.tools.formats.loki import LokiFormat

FMT = LokiFormat()


def find_tsx() -> str | None:
    """tsx from KEP_TEST_TSX, PATH, or where .ci/run installs it (tests/.peers/node)."""
    for candidate in (os.environ.get("KEP_TEST_TSX"), shutil.which("tsx"),
                      str(PEERS_DIR / "node" / "node_modules" / ".bin" / "tsx")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


TSX = find_tsx()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return copy_fixture("loki", tmp_path)


async def test_declarations_match_golden(root: Path) -> None:
    found = await declare_all(FMT, make_ctx(root, {"ts_runtime": "node"}))
    assert declarations(found) == golden("loki/golden.json")


async def test_rejected_forms_are_broken_with_a_reason(tmp_path: Path) -> None:
    root = copy_fixture("loki_broken", tmp_path)
    found = await declare_all(FMT, make_ctx(root, {"ts_runtime": "node"}))
    assert declarations(found) == golden("loki_broken/golden.json")


async def test_configured_source_may_name_the_functions_dir(tmp_path: Path) -> None:
    loki = copy_fixture("loki", tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    ctx = make_ctx(project, {"ts_runtime": "node",
                             "sources": [{"format": "loki", "path": str(loki / "functions")}]})
    # the project's own functions/tools/ and agents/ are listed too (watched until they appear)
    assert FMT.roots(ctx) == [project / "functions" / "tools", project / "agents",
                              loki / "functions" / "tools", loki / "agents"]
    names = set(by_name(await declare_all(FMT, ctx)))
    assert names == {"demo_py", "demo_sh", "demo_ts", "shebang_py"}


async def test_python_tool_result_env_and_dotenv(root: Path) -> None:
    specs = by_name(await declare_all(FMT, make_ctx(root, {"ts_runtime": "node"})))
    ran = await run_call(FMT, specs["demo_py"], {
        "string": "s", "string_enum": "foo", "boolean": True, "integer": 1, "number": 2.5,
        "array": ["a", "b"]}, root)
    assert ran.status == "ok", ran.result
    assert ran.result.split("\n") == [
        "string=s", "string_enum=foo", "boolean=True", "integer=1", "number=2.5",
        "array=['a', 'b']", "string_optional=None", "integer_with_default=42",
        # as Loki's run-tool sets it: LLM_ROOT_DIR is the functions dir
        "array_optional=None", f"LLM_ROOT_DIR={root / 'functions'}", "LLM_TOOL_NAME=demo_py",
        f"LLM_TOOL_CACHE_DIR={root / 'functions' / 'cache' / 'demo_py'}",
        "LOKI_DOTENV=from-loki-dotenv"]


async def test_bash_tool_runs_without_argc(root: Path) -> None:
    specs = by_name(await declare_all(FMT, make_ctx(root, {"ts_runtime": "node"})))
    ran = await run_call(FMT, specs["demo_sh"], {"name": "bob", "count": 2, "loud": True}, root)
    assert (ran.status, ran.result) == ("ok", "HELLO BOB X2")


async def test_shebang_overrides_the_runtime(root: Path) -> None:
    specs = by_name(await declare_all(FMT, make_ctx(root, {"ts_runtime": "node"})))
    assert specs["shebang_py"].run["runtime"] == ["/usr/bin/env", "python3"]
    assert specs["demo_py"].run["runtime"] != ["/usr/bin/env", "python3"]
    ran = await run_call(FMT, specs["shebang_py"], {"name": "Ann"}, root)
    assert (ran.status, ran.result) == ("ok", "Hello, Ann! (3)")
    # a shebang naming a missing interpreter: broken, and it says which
    (root / "functions" / "tools" / "demo_ts.ts").write_text(
        "#!/usr/bin/env kep-no-such-bun\n" + (root / "functions/tools/demo_ts.ts").read_text())
    found = await declare_all(FMT, make_ctx(root))
    assert found["functions/tools/demo_ts.ts"] == (
        "BROKEN: the #! interpreter `kep-no-such-bun` is not installed")


async def test_typescript_without_node_is_broken_not_a_crash(root: Path, tmp_path: Path) -> None:
    only_bash = tmp_path / "only-bash"
    only_bash.mkdir()
    (only_bash / "bash").symlink_to(shutil.which("bash") or "/bin/bash")
    ctx = make_ctx(root, env={**os.environ, "PATH": str(only_bash)})
    found = await declare_all(FMT, ctx)
    assert found["functions/tools/demo_ts.ts"] == (
        "BROKEN: TypeScript tools need Node.js (run with `npx tsx`): node is not on PATH")
    assert isinstance(found["functions/tools/demo_sh.sh"], list)  # the others still load
    ctx = make_ctx(root, {"ts_runtime": "kep-no-such-runtime --flag"})
    found = await declare_all(FMT, ctx)
    assert found["functions/tools/demo_ts.ts"] == ("BROKEN: the TypeScript runtime "
                                                   "`kep-no-such-runtime` ([tools] ts_runtime) "
                                                   "is not installed")


@pytest.mark.skipif(TSX is None, reason="tsx is not installed (.ci/run installs it into "
                    "tests/.peers/node; or set KEP_TEST_TSX)")
async def test_typescript_tool_runs_with_tsx(root: Path) -> None:
    assert TSX is not None
    tools = {"ts_runtime": TSX}
    specs = by_name(await declare_all(FMT, make_ctx(root, tools)))
    ran = await run_call(FMT, specs["demo_ts"], {
        "string": "s", "string_enum": "bar", "boolean": False, "number": 1.5,
        "array_bracket": ["a"], "array_generic": ["b", "c"], "string_optional": "o"},
        root, make_config(root, tools))
    assert ran.status == "ok", ran.result
    assert ran.result.split("\n") == [
        "string=s", "string_enum=bar", "boolean=false", "number=1.5", 'array_bracket=["a"]',
        'array_generic=["b","c"]', "string_optional=o", "string_nullable=null",
        "number_with_default=42", "LLM_TOOL_NAME=demo_ts"]
