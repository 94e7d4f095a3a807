"""AITool hosts (issue 15): a source's `setup = "module:function"` runs in the tool's process
before its classes are built (a host singleton, as AIWhisperer's PathManager), `init.Class`
gives constructor arguments, a class that cannot be built says what it needed, and the prompt
instructions of tools the request does not offer stay out of the system prompt."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tuiapp.project import config as project_config
from tuiapp.project.session_start import prepare
from tuiapp.project.workspace import Workspace
from tuiapp.settings import config_types
from tuiapp.vocab.messages import ToolCall

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "aitool_host"
SOURCE = '[[tools.sources]]\nformat = "aitool"\npath = "hostapp/tools"\n'
HOST = (SOURCE + 'setup = "hostapp.paths:init_paths"\nsetup_args = { project_path = "data" }\n'
        'init.WorkspaceTagTool = { workspace = "ws-1" }\n'
        'init.ProjectPathTool = { path_manager = '
        '{ call = "hostapp.paths:PathManager.get_instance" } }\n')


def project(tmp_path: Path, toml: str) -> Path:
    root = tmp_path / "host"
    shutil.copytree(FIXTURE, root)
    (root / "kep.toml").write_text("[tools]\nbuiltins = false\n" + toml)
    return root


async def workspace(root: Path) -> Workspace:
    ws = Workspace(project_config.load(root))
    await ws.registry.refresh()
    return ws


def broken(ws: Workspace, file: str) -> str:
    return next(b.error for b in ws.registry.broken if b.source.endswith(file))


async def test_without_host_settings_each_class_says_what_it_needed(tmp_path: Path) -> None:
    ws = await workspace(project(tmp_path, SOURCE))
    assert "list_directory" not in ws.registry.tools
    err = broken(ws, "list_directory_tool.py")
    assert "PathManager not initialized" in err and 'setup = "module:function"' in err
    err = broken(ws, "workspace_tag_tool.py")
    assert "needs constructor argument(s) workspace" in err
    assert "init.WorkspaceTagTool = { workspace = … }" in err
    assert "limit" not in err  # has a default: not needed


@pytest.mark.slow
async def test_setup_hook_and_constructor_arguments_make_them_work(tmp_path: Path) -> None:
    root = project(tmp_path, HOST)
    ws = await workspace(root)
    assert not ws.registry.broken, ws.registry.broken
    runner = ws.runner("t")
    fin = await runner.execute(ws.registry.tools["list_directory"],
                               ToolCall("c", "list_directory", {}, "{}"), lambda e: None)
    assert fin.status == "ok", fin.result
    assert json.loads(fin.result) == {"root": str((root / "data").resolve()),
                                      "entries": ["a.txt", "b.txt"]}
    fin = await runner.execute(ws.registry.tools["workspace_tag"],
                               ToolCall("c", "workspace_tag", {"item": "x"}, "{}"),
                               lambda e: None)
    assert (fin.status, fin.result) == ("ok", "x tagged in ws-1 (limit 3)")


@pytest.mark.slow
async def test_an_object_the_host_builds_is_given_through_a_call(tmp_path: Path) -> None:
    """`init.Class = { arg = { call = "module:function" } }`: the class gets what that
    callable returns (after setup ran), with no change to the class's code."""
    root = project(tmp_path, HOST)
    ws = await workspace(root)
    assert "project_path" in ws.registry.tools, ws.registry.broken
    fin = await ws.runner("t").execute(ws.registry.tools["project_path"],
                                       ToolCall("c", "project_path", {}, "{}"), lambda e: None)
    assert (fin.status, fin.result) == ("ok", "data")
    setup_only = SOURCE + 'setup = "hostapp.paths:init_paths"\n'
    bare = await workspace(project(tmp_path / "b", setup_only))
    err = broken(bare, "project_path_tool.py")
    assert "init.ProjectPathTool = { path_manager = … }" in err
    assert 'call = "module:function"' in err


async def test_a_failing_setup_is_named(tmp_path: Path) -> None:
    ws = await workspace(project(tmp_path, SOURCE + 'setup = "hostapp.nope:init"\n'))
    err = broken(ws, "list_directory_tool.py")
    assert "setup hostapp.nope:init failed: ModuleNotFoundError" in err
    assert "\n" not in err


@pytest.mark.parametrize("extra, why", [
    ('setup = "no colon here"\n', "module:function"),
    ('setup = "a:b; rm -rf /"\n', "module:function"),
    ("init.X = 5\n", "init.ClassName"),
])
def test_bad_host_settings_are_one_clear_line(tmp_path: Path, extra: str, why: str) -> None:
    root = project(tmp_path, SOURCE + extra)
    with pytest.raises(config_types.ConfigError) as e:
        project_config.load(root)
    assert why in str(e.value) and "\n" not in str(e.value)


async def test_instructions_only_for_tools_the_request_offers(tmp_path: Path) -> None:
    root = project(tmp_path, HOST)
    (root / "prompts").mkdir()
    (root / "prompts" / "tag.prompt").write_text(
        '.prompt {"name": "tag", "version": "1"}\n.functions workspace_tag\n.user Tag it\n')
    ws = await workspace(root)
    full = ws.system_prompt()
    assert "Use list_directory" in full and "WORKSPACE-TAG-INSTRUCTIONS" in full
    ws.start = plan = prepare(ws, prompt="tag")
    await plan.ready()
    narrowed = ws.system_prompt()
    assert "WORKSPACE-TAG-INSTRUCTIONS" in narrowed
    assert "Use list_directory" not in narrowed  # not offered in this request
