"""Loki's `enabled_tools` and `mapping_tools` (issue 15), in the shape of Loki's own global
config.yaml: outside an agent only the enabled tools (names and aliases) are offered; an
agent's `global_tools` may name an alias; what an alias names that is not a visible tool, and
an entry that is neither a file nor an alias, are named in a notice."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tuiapp.project import config as project_config
from tuiapp.project.session_start import prepare
from tuiapp.project.workspace import Workspace

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "loki_config"
VISIBLE = """\
visible_tools:
  - execute_command.sh
  - fs_patch.sh
  - raw_args.sh
  - demo_py.py
#  - hidden_tool.sh
"""


def loki_project(tmp_path: Path, head: str) -> Path:
    root = tmp_path / "loki"
    shutil.copytree(FIXTURE, root, symlinks=True)
    (root / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    (root / "config.yaml").write_text(f"model: openai:gpt-4o\nfunction_calling: true\n"
                                      f"{head}{VISIBLE}")
    editor = root / "agents" / "editor"
    editor.mkdir()
    (editor / "config.yaml").write_text(
        "name: editor\ndescription: Edits files\nversion: 0.1.0\n"
        "instructions: You edit files.\n"
        "global_tools:\n  - fs\n  - demo_py.py\n  - web\n")
    return root


async def session_tools(root: Path) -> set[str]:
    ws = Workspace(project_config.load(root))
    await ws.registry.refresh()
    assert not ws.registry.broken, ws.registry.broken
    return set(ws.session_tools())


ALIASES = "mapping_tools:\n  fs: 'fs_patch,raw_args,fs_gone'\n  run: [execute_command]\n"


async def test_enabled_tools_with_an_alias_is_what_a_session_is_offered(tmp_path: Path) -> None:
    root = loki_project(tmp_path, ALIASES + "enabled_tools: 'fs, execute_command'\n")
    offered = await session_tools(root)
    loki = {"execute_command", "fs_patch", "raw_args", "demo_py", "ask_user"}
    assert offered & loki == {"execute_command", "fs_patch", "raw_args"}
    ws = Workspace(project_config.load(root))
    await ws.registry.refresh()
    assert loki <= set(ws.registry.tools)  # still listed (visible): only not offered


@pytest.mark.parametrize(("setting", "expected"), [
    ("enabled_tools: all\n", {"execute_command", "fs_patch", "raw_args", "demo_py",
                              "ask_user"}),
    ("enabled_tools: null\n", {"execute_command", "fs_patch", "raw_args", "demo_py",
                               "ask_user"}),  # kep has no `.set enabled_tools`: all visible
    ("enabled_tools: run\n", {"execute_command"}),  # an alias given as a YAML list
    ("enabled_tools: \"\\tdemo_py ,, nope\\n\"\n", {"demo_py"}),  # tabs, empty items, unknown
    ("enabled_tools: ''\n", set()),  # Loki: an empty list enables nothing
])
async def test_enabled_tools_forms(tmp_path: Path, setting: str, expected: set[str]) -> None:
    offered = await session_tools(loki_project(tmp_path, ALIASES + setting))
    assert offered & {"execute_command", "fs_patch", "raw_args", "demo_py",
                      "ask_user"} == expected


async def test_a_changed_enabled_tools_applies_at_the_next_listing(tmp_path: Path) -> None:
    root = loki_project(tmp_path, ALIASES + "enabled_tools: fs\n")
    assert "demo_py" not in await session_tools(root)
    (root / "config.yaml").write_text(f"{ALIASES}enabled_tools: fs,demo_py\n{VISIBLE}")
    assert "demo_py" in await session_tools(root)  # the discovery cache is not stale


async def test_an_agent_names_an_alias_in_global_tools(tmp_path: Path) -> None:
    root = loki_project(tmp_path, ALIASES + "enabled_tools: execute_command\n")
    ws = Workspace(project_config.load(root))
    await ws.registry.refresh()
    plan = prepare(ws, agent="editor")
    ws.start = plan
    await plan.ready(ws.runner("test"))
    # fs → fs_patch, raw_args (fs_gone is no visible tool); demo_py.py by file name; the
    # agent gets them even though enabled_tools leaves them out of plain sessions
    assert sorted(t.name for t in plan.visible_tools()) == ["demo_py", "fs_patch", "raw_args"]
    notice = " ".join(plan.notices)
    assert "alias 'fs' (mapping_tools) names fs_gone, not a visible tool" in notice
    assert "global_tools entry 'web' is neither a tool file name nor a mapping_tools alias" \
        in notice


async def test_a_broken_mapping_tools_is_ignored_not_fatal(tmp_path: Path) -> None:
    root = loki_project(tmp_path, "mapping_tools: [not, a, mapping]\nenabled_tools: fs\n")
    assert await session_tools(root) & {"fs_patch", "raw_args", "demo_py"} == set()
