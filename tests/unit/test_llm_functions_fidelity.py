"""llm-functions as argc and its build scripts do it (issue 15): comment blocks across empty
`#` lines, agent variables satisfying `@env LLM_AGENT_VAR_*!`, tools.sh > tools.js > tools.py,
per-server `"prefix"` in mcp.json; and machine-dependent verdicts never served from the cache."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tuiapp.mcp.client import McpManager
from tuiapp.mcp.servers import read_mcp_json
from tuiapp.project import config as project_config
from tuiapp.project.session_start import prepare
from tuiapp.project.workspace import Workspace
from tuiapp.settings import config_types
from tuiapp.settings.config_types import Config, McpServerConfig
from tuiapp.tools.cache import DeclarationCache
from tuiapp.tools.registry import Registry
from tuiapp.vocab.messages import ToolCall

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "llm_functions_fidelity"
FAKE_MCP = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")


def project(tmp_path: Path) -> Path:
    root = tmp_path / "llm"
    shutil.copytree(FIXTURE, root, symlinks=True)
    (root / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    return root


async def workspace(root: Path) -> Workspace:
    ws = Workspace(project_config.load(root))
    await ws.registry.refresh()
    return ws


async def test_option_description_keeps_the_example_after_an_empty_comment_line(
        tmp_path: Path) -> None:
    ws = await workspace(project(tmp_path))
    contents = ws.registry.tools["fs_patch"].parameters["properties"]["contents"]["description"]
    assert contents == (
        "The patch to apply to the file\n\nHere is an example of a patch block that can be "
        "applied to modify the file to request the user's name:\n--- a/hello.py\n"
        "+++ b/hello.py\n@@ ... @@\n def hello():\n-    print(\"Hello World\")\n"
        "+    name = input(\"What is your name? \")\n+    print(f\"Hello {name}\")")


async def test_agent_variable_satisfies_required_env_and_reaches_the_tool(
        tmp_path: Path) -> None:
    ws = await workspace(project(tmp_path))
    assert "LLM_AGENT_VAR_DSN" not in os.environ
    assert {"read_query", "list_tables"} <= set(ws.registry.tools)  # was: 0 tools
    ws.start = plan = prepare(ws, agent="sql", sets={"dsn": "sqlite:///x.db"})
    await plan.ready(ws.runner("t"))
    spec = ws.registry.tools["list_tables"]
    fin = await ws.runner("t").execute(spec, ToolCall("c", "list_tables", {}, "{}"),
                                       lambda e: None)
    assert (fin.status, fin.result) == ("ok", "tables of sqlite:///x.db")


async def test_a_variable_the_agent_does_not_declare_is_still_required(tmp_path: Path) -> None:
    root = project(tmp_path)
    tools = root / "agents" / "sql" / "tools.sh"
    tools.write_text(tools.read_text().replace("LLM_AGENT_VAR_DSN!", "LLM_AGENT_VAR_OTHER!"))
    ws = await workspace(root)
    assert "list_tables" not in ws.registry.tools
    assert any("LLM_AGENT_VAR_OTHER" in b.error for b in ws.registry.broken)


async def test_tools_sh_wins_over_js_and_py_without_duplicates(tmp_path: Path) -> None:
    ws = await workspace(project(tmp_path))
    spec = ws.registry.tools["which_file"]
    assert spec.source.endswith("tools.sh")
    assert not [b for b in ws.registry.broken if "duplicate" in b.error]
    fin = await ws.runner("t").execute(spec, ToolCall("c", "which_file", {}, "{}"),
                                       lambda e: None)
    assert fin.result == "tools.sh"


def test_per_server_prefix_is_read_from_mcp_json(tmp_path: Path) -> None:
    servers = read_mcp_json(project(tmp_path) / "mcp.json")
    assert servers["git"].prefix is False and servers["fetch"].prefix is None
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"mcpServers": {"x": {"command": "y", "prefix": "no"}}}))
    try:
        read_mcp_json(bad)
    except Exception as e:
        assert "prefix" in str(e) and "\n" not in str(e)
    else:
        raise AssertionError("a non-boolean prefix must be refused")


@pytest.mark.slow
async def test_prefix_false_keeps_bare_names_for_that_server_only(tmp_path: Path) -> None:
    bare = McpServerConfig("git", sys.executable, (FAKE_MCP,), prefix=False)
    prefixed = McpServerConfig("other", sys.executable, (FAKE_MCP,))
    cfg = Config(project_root=tmp_path, mcp_servers={"git": bare, "other": prefixed})
    manager = McpManager(cfg, on_tools=lambda k, i: None, on_state=lambda s: None)
    manager.start()
    try:
        await manager.wait_settled(30)
        names = {t.name for t in manager.tools()}
        assert "echo" in names and "other_echo" in names
        assert "git_echo" not in names
    finally:
        await manager.stop()


# ---- (6) machine-dependent verdicts ---------------------------------------------------------

async def test_installing_the_interpreter_fixes_the_tool_without_touching_it(
        tmp_path: Path, monkeypatch) -> None:
    """A `#!` interpreter missing, installed later into a directory already on PATH: the next
    discovery (also a new process, with the disk cache) lists the tool."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    tools = tmp_path / "proj" / "functions" / "tools"
    tools.mkdir(parents=True)
    (tools / "greet.py").write_text(
        "#!/usr/bin/env kep-test-python\n"
        "def run(name: str):\n    \"\"\"Greet.\n\n    Args:\n        name: who\n    \"\"\"\n"
        "    return f'hi {name}'\n")
    cfg = project_config.load(tmp_path / "proj")
    cache = DeclarationCache(tmp_path / "cache")
    reg = Registry(cfg, cache=cache)
    await reg.refresh()
    assert "greet" not in reg.tools
    assert any("kep-test-python" in b.error for b in reg.broken)
    # the same registry and a fresh one (another kep process) both see the same verdict
    assert "greet" not in (await _fresh(cfg, cache)).tools
    interp = bindir / "kep-test-python"
    interp.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    interp.chmod(0o755)
    await reg.refresh()
    assert "greet" in reg.tools
    assert "greet" in (await _fresh(cfg, cache)).tools


async def test_setting_a_required_variable_fixes_the_tool_next_listing(
        tmp_path: Path, monkeypatch) -> None:
    root = project(tmp_path)
    (root / "tools" / "needs_token.sh").write_text(
        "#!/usr/bin/env bash\n# @describe Use the token\n# @env KEP_TEST_TOKEN!\n"
        "main() { echo ok >> \"$LLM_OUTPUT\"; }\n")
    monkeypatch.delenv("KEP_TEST_TOKEN", raising=False)
    cfg = project_config.load(root)
    cache = DeclarationCache(tmp_path / "cache")
    assert "needs_token" not in (await _fresh(cfg, cache)).tools
    monkeypatch.setenv("KEP_TEST_TOKEN", "x")
    assert "needs_token" in (await _fresh(cfg, cache)).tools


async def test_installing_a_required_program_fixes_the_tool_without_touching_it(
        tmp_path: Path, monkeypatch) -> None:
    """`@meta require-tools`: the program installed later into a directory already on PATH
    (PATH itself unchanged, the file untouched) fixes the tool at the next listing."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    root = project(tmp_path)
    (root / "tools" / "needs_prog.sh").write_text(
        "#!/usr/bin/env bash\n# @describe Use a program\n# @meta require-tools kep-test-prog\n"
        "main() { kep-test-prog >> \"$LLM_OUTPUT\"; }\n")
    cfg = project_config.load(root)
    cache = DeclarationCache(tmp_path / "cache")
    reg = Registry(cfg, cache=cache)
    await reg.refresh()
    assert "needs_prog" not in reg.tools
    assert any("kep-test-prog" in b.error for b in reg.broken)
    assert "needs_prog" not in (await _fresh(cfg, cache)).tools
    prog = bindir / "kep-test-prog"
    prog.write_text("#!/bin/sh\necho installed\n")
    prog.chmod(0o755)
    await reg.refresh()
    assert "needs_prog" in reg.tools
    assert "needs_prog" in (await _fresh(cfg, cache)).tools


async def _fresh(cfg: config_types.Config, cache: DeclarationCache) -> Registry:
    reg = Registry(cfg, cache=cache)
    await reg.refresh()
    return reg


# ---- hostile comment blocks -----------------------------------------------------------------

def test_argc_blocks_with_hostile_lines() -> None:
    from tuiapp.tools.formats import argc_tags

    huge = "x" * (2 * 1024 * 1024)
    text = ("# @describe Top\n#\n# " + huge + "\n#\t tabbed\n#\x1b[31mred\r\n"
            "## double hash\n#  @notatag? no: indented tag is a tag\n# after\n"
            "main() { :; }\n")
    script = argc_tags.parse(text)
    desc = script.root.description
    assert desc.startswith("Top\n\n" + huge[:10]) and len(desc) > 2 * 1024 * 1024
    assert "\n tabbed\n" in desc  # one tab taken, the rest kept (argc)
    assert "\n\x1b[31mred\n" in desc  # kept as text; the display edge sanitises it; \r dropped
    assert desc.endswith("\ndouble hash")  # `#  @x` is a tag line: the block ends there
    blocks = [argc_tags.parse(f"# @describe A\n#{sep}\n# B\n").root.description
              for sep in ("", " ", "\t", "   ")]
    assert blocks == ["A\n\nB"] * 4
    assert argc_tags.parse("# @describe A\n\n# B\n").root.description == "A"  # a blank line ends it
    assert argc_tags.parse("# @describe A\n  # B\n").root.description == "A"  # so does code
    many = "# @describe A\n" + "#\n" * 500 + "# end\n"
    assert argc_tags.parse(many).root.description == "A" + "\n" * 501 + "end"
