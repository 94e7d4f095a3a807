"""The system prompt: base + active prompt/agent + extension packs' SYSTEM_PROMPT + AITool
instructions, only for tools the session can use; `kep run --show-system` prints it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import KEP, kep_env

from tuiapp.project import config as project_config
from tuiapp.project.session_start import prepare
from tuiapp.project.system_prompt import base_prompt, compose
from tuiapp.project.workspace import Workspace
from tuiapp.vocab.tool_specs import ToolSpec

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NO_ARGS: dict[str, object] = {"type": "object", "properties": {}}


def pack_tool(name: str, pack: str, prompt: str) -> ToolSpec:
    return ToolSpec(name, "", NO_ARGS, "extension", f"/x/{pack.lower()}_tool.py",
                    run={"pack": pack, "system_prompt": prompt})


def aitool(name: str, instructions: str) -> ToolSpec:
    return ToolSpec(name, "", NO_ARGS, "aitool", "/x/tools.py",
                    run={"system_prompt": instructions})


def test_sections_in_order_once_each() -> None:
    tools = [pack_tool("a", "Notes", "Take notes.\nBe tidy."), pack_tool("b", "Notes", "same"),
             pack_tool("c", "Weather", ""), aitool("calc", "Use calc."),
             aitool("calc2", "Use calc."),
             ToolSpec("readfile", "", NO_ARGS, "keprompt", "/x/readfile")]
    assert compose("Base.", "Session part.", tools) == (
        "Base.\n\nSession part.\n\n## Notes\n\nTake notes.\nBe tidy.\n\n## calc\n\nUse calc.")
    assert compose("Base.", "", []) == "Base."


def test_config_system_prompt_replaces_the_base(tmp_path: Path) -> None:
    (tmp_path / "kep.toml").write_text('system_prompt = "Talk like a pirate."\n')
    ws = Workspace(project_config.load(tmp_path))
    assert ws.system_prompt() == "Talk like a pirate."


@pytest.mark.slow
def test_show_system_with_a_prompt_packs_and_aitools(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURES / "extensions" / "extensions" / "notes", root / "extensions" / "notes")
    shutil.copytree(FIXTURES / "aitool" / "mytools", root / "mytools")
    (root / "prompts").mkdir()
    (root / "kep.toml").write_text('[tools]\nbuiltins = false\n'
                                   '[[tools.sources]]\nformat = "aitool"\npath = "mytools"\n')
    plain = run_show(root)
    assert plain.returncode == 0, plain.stderr
    base = base_prompt(root.resolve())
    assert plain.stdout == (
        f"{base}\n\n## Notes\n\nManage project notes and milestones.\nAlways name the "
        "project you touched.\n\n## calc\n\nUse calc for arithmetic.\n\n## read_file\n\n"
        "**Tool: `read_file`** Use it to read a text file.\n")
    # A prompt's .system joins in; its .functions keeps only the Notes pack's tools.
    (root / "prompts" / "notes.prompt").write_text(
        ".functions notes_tool.*\n.system Work on <<project>>.\n.user go\n")
    narrowed = run_show(root, "--prompt", "notes", "--set", "project=kep")
    assert narrowed.returncode == 0, narrowed.stderr
    assert narrowed.stdout == (
        f"{base}\n\nWork on kep.\n\n## Notes\n\nManage project notes and milestones.\n"
        "Always name the project you touched.\n")


def test_agent_part_follows_the_workspace_start(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    d = root / "agents" / "tiny"
    d.mkdir(parents=True)
    (d / "index.yaml").write_text("name: Tiny\ninstructions: Be tiny on {{__os_family__}}.\n")
    ws = Workspace(project_config.load(root))
    ws.start = prepare(ws, agent="tiny")
    assert ws.system_prompt().endswith("\n\nBe tiny on unix.")
    ws.start = None
    assert "Be tiny" not in ws.system_prompt()


def run_show(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KEP, "run", "--project", str(root), "--show-system", *argv],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                          env=kep_env())
