"""llm-functions agents: index.yaml, {{var}} and built-ins, variables (--set, missing ones,
LLM_AGENT_VAR_* seen by a tool), tools.txt, dynamic instructions, documents, --show-system."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import KEP, kep_env

from tuiapp.conversation import agent as agent_mod
from tuiapp.conversation import agent_model
from tuiapp.project import config as project_config
from tuiapp.project.session_start import StartError, choices, parse_sets, prepare
from tuiapp.project.workspace import Workspace

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "agents"


def setup_project(root: Path) -> Path:
    """An llm-functions layout: agents/helper and the shared tools/ its tools.txt names."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(FIXTURES / "helper", root / "agents" / "helper")
    shutil.copytree(FIXTURES / "shared_tools", root / "tools")
    (root / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    return root


async def workspace(root: Path) -> Workspace:
    ws = Workspace(project_config.load(root))
    await ws.registry.refresh()
    return ws


def kep(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KEP, "run", "--project", str(root), *argv], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL, env=kep_env())


def test_index_yaml_is_read() -> None:
    a = agent_mod.load_agent(FIXTURES / "helper")
    assert (a.name, a.title, a.version) == ("helper", "Helper", "0.1.0")
    assert [(v.name, v.default) for v in a.variables] == [("lang", None), ("greeting", "hello")]
    assert a.starters == ["show_vars", "What can you do?"]
    assert a.shared_tools == ["shout"]  # `shout.sh` in tools.txt; comments skipped
    assert [v.name for v in a.missing({})] == ["lang"]
    assert a.env({"lang": "fr"}) == {"LLM_AGENT_VAR_LANG": "fr", "LLM_AGENT_VAR_GREETING": "hello"}
    assert agent_model.env_name("api-key") == "LLM_AGENT_VAR_API_KEY"


def test_broken_index_names_the_file(tmp_path: Path) -> None:
    d = tmp_path / "agents" / "bad"
    d.mkdir(parents=True)
    (d / "index.yaml").write_text("name: Bad\ninstructions: [unclosed\n")
    with pytest.raises(agent_mod.AgentError, match=r"bad/index.yaml:\d+: not valid YAML"):
        agent_mod.load_agent(d)
    (d / "index.yaml").write_text("name: Bad\nvariables: [{description: no name}]\n")
    with pytest.raises(agent_mod.AgentError, match=r"variables\[1\]"):
        agent_mod.load_agent(d)


async def test_instructions_builtins_tools_and_documents(tmp_path: Path) -> None:
    ws = await workspace(setup_project(tmp_path / "proj"))
    plan = prepare(ws, agent="helper", sets={"lang": "French"})
    ws.start = plan
    await plan.ready()
    assert sorted(t.name for t in plan.visible_tools()) == ["shout", "show_vars"]  # not whisper
    assert plan.allow_only("shout") and not plan.allow_only("whisper")
    text = plan.system_text()
    assert text.startswith("You help in French, greeting with hello.\nSystem: ")
    assert "{{__" not in text and f"Working directory: {ws.root}." in text
    assert "Your tools:\n1. shout: Upper-case a word\n2. show_vars: Print the agent" in text
    assert "Left alone: {{not_a_variable}}" in text  # unknown placeholders stay, as in AIChat
    docs = "## Documents\n\n### notes.md\n\n# Helper notes\nThe helper knows <<this>> and {{that}}."
    assert docs in text  # documents are data: never templates
    assert any("remote.txt skipped: kep has no RAG yet" in n for n in plan.notices)
    assert ws.system_prompt().startswith("You are kep") and text in ws.system_prompt()


def test_variables_missing_unknown_and_sets(tmp_path: Path) -> None:
    root = setup_project(tmp_path / "proj")
    ws = Workspace(project_config.load(root))
    plan = prepare(ws, agent="helper")
    assert [(f.name, f.required, f.default) for f in plan.fields()] == [
        ("lang", True, None), ("greeting", False, "hello")]
    assert [f.name for f in plan.missing()] == ["lang"]
    assert not plan.with_values({"lang": "de"}).missing()
    with pytest.raises(StartError, match="has no variable 'colour'"):
        prepare(ws, agent="helper", sets={"colour": "red"})
    with pytest.raises(StartError, match=r"no agent 'nosuch'.*agents: helper"):
        prepare(ws, agent="nosuch")
    with pytest.raises(StartError, match="expected NAME=VALUE"):
        parse_sets(["novalue"])
    assert [(c.kind, c.name) for c in choices(ws)] == [("agent", "helper")]


async def test_dynamic_instructions_come_from_the_tools_file(tmp_path: Path) -> None:
    root = setup_project(tmp_path / "proj")
    index = root / "agents" / "helper" / "index.yaml"
    index.write_text(index.read_text() + "dynamic_instructions: true\n")
    tools = root / "agents" / "helper" / "tools.sh"
    tools.write_text(tools.read_text() + '\n_instructions() {\n'
                     '    echo "Dynamic for {{lang}} by $LLM_AGENT_NAME" >> "$LLM_OUTPUT"\n}\n')
    ws = await workspace(root)
    ws.start = plan = prepare(ws, agent="helper", sets={"lang": "Dutch"})
    await plan.ready(ws.runner("test"))
    assert plan.system_text().startswith("Dynamic for Dutch by helper")


def test_documents_are_capped(tmp_path: Path) -> None:
    d = tmp_path / "agents" / "big"
    d.mkdir(parents=True)
    (d / "index.yaml").write_text("name: Big\ninstructions: x\ndocuments: [big.txt, gone.md]\n")
    (d / "big.txt").write_text("y" * (agent_mod.DOCUMENT_CAP + 10))
    docs = agent_mod.read_documents(agent_mod.load_agent(d), tmp_path)
    assert docs.text.endswith(f"… [cut at {agent_mod.DOCUMENT_CAP // 1024} KiB]")
    assert any("big.txt cut at" in n for n in docs.notices)
    assert any("gone.md not found" in n for n in docs.notices)


def test_cli_agent_variables_reach_the_tool_and_show_system(tmp_path: Path) -> None:
    root = setup_project(tmp_path / "proj")
    r = kep(root, "--agent", "helper", "--set", "lang=French", "--model", "offline", "-y",
            "show_vars")
    assert r.returncode == 0, r.stderr
    assert "lang=French greeting=hello agent=helper" in r.stdout  # LLM_AGENT_VAR_* and name
    shown = kep(root, "--agent", "helper", "--set", "lang=Klingon", "--set", "greeting=qapla",
                "--show-system")
    assert shown.returncode == 0, shown.stderr
    assert "You help in Klingon, greeting with qapla." in shown.stdout
    assert "1. shout: Upper-case a word" in shown.stdout
    assert "kep has no RAG yet" in shown.stderr
    missing = kep(root, "--agent", "helper", "--show-system")
    assert missing.returncode == 2 and "--set lang=VALUE" in missing.stderr
