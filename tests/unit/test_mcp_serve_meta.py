"""`kep mcp serve` keeps the metadata of what it serves: a bridged MCP server's titles,
annotations, outputSchema and structuredContent pass through unchanged, and kep's own tools
declare readOnlyHint/destructiveHint truthfully. The client is the mcp SDK's own."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from conftest import KEP, kep_env, write_tool
from mcp import Client, StdioServerParameters

FAKE = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_annotated_server.py")
OWN_TOOL = r'''#!/usr/bin/env python3
import json, sys
if sys.argv[1] == "--list-functions":
    print(json.dumps([{"name": "mine", "description": "A user's tool",
                       "parameters": {"type": "object"}}]))
    sys.exit(0)
print("ran")
'''


def params(root: Path) -> StdioServerParameters:
    return StdioServerParameters(command=KEP[0], args=[*KEP[1:], "mcp", "serve", "--project",
                                                       str(root)], env=kep_env())


@pytest.fixture
def bridged(project: Path) -> Path:
    # In the project: the sandbox shows a server the project's files, not the test suite's.
    shutil.copy(FAKE, project / "ann_server.py")
    (project / "mcp.json").write_text(json.dumps({"mcpServers": {"ann": {
        "command": sys.executable, "args": [str(project / "ann_server.py")]}}}))
    (project / "kep.toml").write_text('[tools]\nbuiltins = false\n[approval]\ndefault = "allow"\n')
    return project


async def test_bridged_tools_keep_title_annotations_and_output_schema(bridged: Path) -> None:
    async with Client(params(bridged), cache=None) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        weather = next(t for n, t in tools.items() if n.endswith("weather"))
        drop = next(t for n, t in tools.items() if n.endswith("drop_table"))
        assert weather.title == "Current weather"
        assert weather.output_schema is not None
        assert weather.output_schema["required"] == ["celsius", "sky"]
        assert weather.annotations is not None
        a = weather.annotations
        assert (a.title, a.read_only_hint, a.destructive_hint, a.idempotent_hint,
                a.open_world_hint) == ("Weather (annotated)", True, False, True, True)
        assert drop.title == "Drop a table" and drop.annotations is not None
        assert drop.annotations.destructive_hint is True
        assert drop.annotations.read_only_hint is False
        assert drop.output_schema is None

        result = await client.call_tool(weather.name, {"city": "Oslo"})
        assert not result.is_error
        assert result.structured_content == {"celsius": 21.5, "sky": "clear"}


@pytest.fixture
def own(project: Path) -> Path:
    write_tool(project / "prompts" / "functions" / "mine", OWN_TOOL)
    (project / "kep.toml").write_text('[approval]\ndefault = "allow"\n')
    return project


async def test_kep_own_tools_declare_their_hints_truthfully(own: Path) -> None:
    async with Client(params(own), cache=None) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}

    def hints(name: str) -> tuple[bool | None, bool | None]:
        a = tools[name].annotations
        assert a is not None, name
        return a.read_only_hint, a.destructive_hint

    for name in ("readfile", "listdir", "grep"):
        assert hints(name) == (True, False), name
    for name in ("writefile", "write_base64_file", "execcmd"):
        assert hints(name) == (False, True), name
    assert hints("wwwget")[0] is True and tools["wwwget"].annotations.open_world_hint is True
    # A user's own function: kep cannot know it changes nothing, so it never claims so.
    assert hints("mine") == (False, True)
    # Every served tool says something (no tool left to the client's guess).
    assert all(t.annotations is not None for t in tools.values())


async def test_a_tool_named_like_a_builtin_is_not_declared_read_only(project: Path) -> None:
    """The name proves nothing: a project's own `readfile` is not kep's."""
    write_tool(project / "prompts" / "functions" / "readfile", OWN_TOOL.replace('"mine"',
                                                                                 '"readfile"'))
    (project / "kep.toml").write_text('[tools]\nbuiltins = false\n[approval]\n'
                                      'default = "allow"\n')
    async with Client(params(project), cache=None) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert tools["readfile"].annotations is not None
    assert tools["readfile"].annotations.read_only_hint is False
