"""Loki as Loki runs it (issue 15): a Loki config dir used unmodified — visible_tools,
functions/mcp.json, the runner's environment (LLM_PROMPT_UTILS_FILE, LLM_TOOL_RAW_JSON …),
whole-docstring Python descriptions, and agents/NAME/config.yaml agents (global_tools,
variables, dynamic instructions, mcp_servers, notices for what kep does not honour, graph.yaml
named as unsupported)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tuiapp.mcp.servers import configured_servers
from tuiapp.project import config as project_config
from tuiapp.project.session_start import StartError, choices, prepare
from tuiapp.project.workspace import Workspace
from tuiapp.vocab.messages import ToolCall

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "loki_config"


def loki_project(tmp_path: Path) -> Path:
    root = tmp_path / "loki"
    shutil.copytree(FIXTURE, root, symlinks=True)
    (root / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    return root


async def workspace(root: Path) -> Workspace:
    ws = Workspace(project_config.load(root))
    await ws.registry.refresh()
    return ws


async def call(ws: Workspace, name: str, args: dict) -> str:
    """One call as a session makes it (the agent's variables, when one started, in its env)."""
    spec = ws.session_tools()[name]  # what a conversation offers
    fin = await ws.runner("test").execute(spec, ToolCall("c1", name, args, json.dumps(args)),
                                          lambda e: None)
    return f"{fin.status}: {fin.result}"


async def test_visible_tools_and_agent_global_tools_are_listed(tmp_path: Path) -> None:
    ws = await workspace(loki_project(tmp_path))
    names = set(ws.registry.tools)
    # config.yaml's visible_tools, plus ask_user.sh that the coder agent's global_tools name;
    # hidden_tool.sh is in neither, so Loki never compiles it
    assert {"execute_command", "fs_patch", "raw_args", "demo_py", "ask_user"} <= names
    assert "hidden_tool" not in names
    # the agents' own tools; `_helper` and `_instructions` are not offered
    assert {"where_am_i", "list_tables"} <= names
    assert not any(n.startswith("_") for n in names)
    assert not ws.registry.broken, ws.registry.broken


async def test_python_description_is_the_whole_docstring(tmp_path: Path) -> None:
    ws = await workspace(loki_project(tmp_path))
    desc = ws.registry.tools["demo_py"].description
    assert desc.startswith("Demonstrates how to create a tool using Python")
    assert "\n    Args:\n        string: Define a required string property" in desc
    assert desc.endswith("string_optional: Define an optional string property")


async def test_argc_blocks_continue_across_empty_comment_lines(tmp_path: Path) -> None:
    ws = await workspace(loki_project(tmp_path))
    spec = ws.registry.tools["fs_patch"]
    assert spec.description.endswith("Rules for the patch:\n  1. Give a unified diff.\n\n"
                                     "  2. Keep enough context lines.")
    contents = spec.parameters["properties"]["contents"]["description"]
    assert contents.startswith("The patch to apply to the file\n\nExample:\n--- a/hello.py")
    assert "\n\\@@ ... @@\n def hello():\n" in contents  # argc keeps the escape
    assert contents.endswith('+    print("Hello there")')


async def test_runner_environment_matches_loki(tmp_path: Path) -> None:
    root = loki_project(tmp_path)
    ws = await workspace(root)
    out = await call(ws, "raw_args", {"text": "a 'quoted' \"word\"\nnext"})
    assert out.startswith("ok: ")
    lines = out[4:].split("\n")
    assert json.loads(lines[0].removeprefix("raw=")) == {"text": "a 'quoted' \"word\"\nnext"}
    assert lines[-3:] == [f"root={root / 'functions'}", "name=raw_args",
                          f"cache={root / 'functions' / 'cache' / 'raw_args'}"]


async def test_guarded_tools_run_after_kep_approval(tmp_path: Path) -> None:
    """execute_command sources LLM_PROMPT_UTILS_FILE and calls guard_operation: the call was
    approved in kep, so it runs the command (before: `DONE`, having run nothing)."""
    root = loki_project(tmp_path)
    ws = await workspace(root)
    out = await call(ws, "execute_command", {"command": "echo ran-$((6*7))"})
    assert out == "ok: ran-42"
    target = root / "hello.py"
    target.write_text('def hello():\n    print("Hello World")\n')
    patch = ('--- a/hello.py\n+++ b/hello.py\n@@ ... @@\n def hello():\n'
             '-    print("Hello World")\n+    print("Hello there")\n')
    out = await call(ws, "fs_patch", {"path": str(target), "contents": patch})
    assert out == f"ok: INFO: Applied the patch to: {target}"  # plain text: no colour codes
    assert target.read_text() == 'def hello():\n    print("Hello there")\n'
    bad = await call(ws, "fs_patch", {"path": str(target), "contents": "@@\n-nope\n+x\n"})
    assert bad.startswith("failed") and "unable to apply patch" in bad
    assert target.read_text() == 'def hello():\n    print("Hello there")\n'  # untouched


async def test_interactive_prompts_fail_closed(tmp_path: Path) -> None:
    ws = await workspace(loki_project(tmp_path))
    out = await call(ws, "ask_user", {"path": "/important"})
    assert out.startswith("failed") and "deleted" not in out
    assert "tools run by kep have none" in out


def test_functions_mcp_json_is_read(tmp_path: Path) -> None:
    root = loki_project(tmp_path)
    servers = configured_servers(project_config.load(root))
    assert servers["ddg-search"].command == "uvx"
    # the project's own mcp.json wins over the Loki one
    (root / "mcp.json").write_text(json.dumps(
        {"mcpServers": {"ddg-search": {"command": "mine"}}}))
    assert configured_servers(project_config.load(root))["ddg-search"].command == "mine"


def test_a_loki_mcp_json_alone_starts_its_servers(tmp_path: Path) -> None:
    """No mcp.json at the root: the agents that name ddg-search still get it (they lost it,
    with no notice)."""
    root = loki_project(tmp_path)
    assert not (root / "mcp.json").exists()
    assert Workspace(project_config.load(root)).has_mcp_servers()
    (root / "functions" / "mcp.json").unlink()
    assert not Workspace(project_config.load(root)).has_mcp_servers()


async def test_config_yaml_agent_loads_with_global_tools_and_notices(tmp_path: Path) -> None:
    ws = await workspace(loki_project(tmp_path))
    listed = {c.name: c for c in choices(ws)}
    assert {"coder", "sql", "flow"} <= set(listed)
    plan = prepare(ws, agent="coder", sets={"project_dir": "/srv/app"})
    ws.start = plan
    await plan.ready(ws.runner("test"))
    assert plan.starters == ["Add a --verbose flag", "Fix the failing build"]
    assert sorted(t.name for t in plan.visible_tools()) == [
        "ask_user", "execute_command", "where_am_i"]  # own + global_tools, nothing else
    text = plan.system_text()
    assert text.startswith("You are a senior engineer working in /srv/app.")
    assert "1. ask_user: Ask the user" in text and "3. where_am_i: Report" in text
    notice = " ".join(plan.notices)
    for key in ("temperature", "auto_continue", "max_auto_continues"):
        assert key in notice  # named, never silently dropped
    assert plan.agent is not None and plan.agent.mcp_servers == ["ddg-search"]
    assert not any("not configured" in n for n in plan.notices)  # functions/mcp.json has it
    env = plan.env
    assert env["LLM_AGENT_VAR_PROJECT_DIR"] == "/srv/app"
    assert env["LLM_AGENT_VAR_AUTO_CONFIRM"] == "1"


async def test_agent_variable_satisfies_env_requirement_and_dynamic_instructions(
        tmp_path: Path) -> None:
    ws = await workspace(loki_project(tmp_path))
    assert "list_tables" in ws.registry.tools  # @env LLM_AGENT_VAR_DSN! is the agent's own
    with pytest.raises(StartError, match="--set dsn=VALUE"):
        await prepare(ws, agent="sql").ready()
    plan = prepare(ws, agent="sql", sets={"dsn": "sqlite:///tmp/x.db"})
    ws.start = plan
    await plan.ready(ws.runner("test"))
    assert plan.system_text().startswith("You manage the database at sqlite:///tmp/x.db.")


async def test_graph_agent_is_named_as_unsupported(tmp_path: Path) -> None:
    ws = await workspace(loki_project(tmp_path))
    with pytest.raises(StartError, match="graph"):
        prepare(ws, agent="flow")
    root = ws.root
    (root / "agents" / "coder" / "graph.yaml").write_text("nodes: []\n")
    plan = prepare(ws, agent="coder")
    assert any("graph" in n for n in plan.notices)


@pytest.mark.parametrize("bad", ["instructions: [1, 2\n", "- a list\n", "\x00\xff garbage\n",
                                 "variables:\n  - description: no name\n"])
async def test_broken_config_yaml_is_one_clear_line(tmp_path: Path, bad: str) -> None:
    root = loki_project(tmp_path)
    (root / "agents" / "coder" / "config.yaml").write_bytes(bad.encode("latin-1"))
    ws = await workspace(root)
    with pytest.raises(StartError) as e:
        prepare(ws, agent="coder")
    assert "config.yaml" in str(e.value) and "\n" not in str(e.value)


async def test_an_unknown_mcp_server_of_an_agent_is_named(tmp_path: Path) -> None:
    root = loki_project(tmp_path)
    (root / "functions" / "mcp.json").write_text('{"mcpServers": {}}')
    ws = await workspace(root)
    plan = prepare(ws, agent="coder")
    assert any("mcp_servers ddg-search not configured" in n for n in plan.notices)


async def test_two_agents_may_have_tools_of_the_same_name(tmp_path: Path) -> None:
    """Loki's own agents share function names (read_file in coder, explore and oracle): each
    agent gets its own, and none is reported as a duplicate."""
    root = loki_project(tmp_path)
    twin = root / "agents" / "twin"
    shutil.copytree(root / "agents" / "coder", twin)
    tools = twin / "tools.sh"
    tools.write_text(tools.read_text().replace("dir=$LLM_AGENT_VAR_PROJECT_DIR", "twin dir="))
    ws = await workspace(root)
    assert not ws.registry.broken, ws.registry.broken
    for agent, expect in (("coder", "dir=/p agent=coder"), ("twin", "twin dir= agent=twin")):
        ws.start = plan = prepare(ws, agent=agent, sets={"project_dir": "/p"})
        await plan.ready()
        assert "where_am_i" in {t.name for t in plan.visible_tools()}
        out = await call(ws, "where_am_i", {})
        assert out.startswith(f"ok: {expect} func=where_am_i"), out
    listed = [e for e in ws.registry.entries() if getattr(e, "name", "") == "where_am_i"]
    assert len(listed) == 2  # both shown in listings
