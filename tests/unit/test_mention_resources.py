"""`@server:uri` reads an MCP resource through `resources/read` of the connected server (a real
MCP server of the SDK, in memory): its text through the secrets filter, an image by its bytes,
and one line for what cannot be attached."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.server.mcpserver import MCPServer

from tuiapp.conversation.mentions import attach_for
from tuiapp.mcp.resource_read import TEXT_CAP, read_resource
from tuiapp.security import secrets
from tuiapp.ui.mention_complete import _resources

SECRET = "sk-resource-Secret-0123456789abcd"
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


def server() -> MCPServer:
    s = MCPServer("docs")

    @s.resource("notes://readme")
    def readme() -> str:
        return f"read me\ntoken={SECRET}\n"

    @s.resource("img://dot", mime_type="image/png")
    def dot() -> bytes:
        return PNG

    @s.resource("img://liar", mime_type="image/png")
    def liar() -> bytes:
        return b"\x00\x01 not an image"

    @s.resource("notes://huge")
    def huge() -> str:
        return "x" * (TEXT_CAP + 1)

    return s


class Conn:
    def __init__(self, client: Any) -> None:
        self.client = client


class Manager:
    """The two things an McpManager offers that mentions use."""

    def __init__(self, client: Any) -> None:
        self._conn = Conn(client)

    def states(self) -> dict[str, object]:
        return {"docs": object()}

    def connection(self, name: str) -> Conn | None:
        return self._conn if name == "docs" else None


@asynccontextmanager
async def connected() -> AsyncIterator[Manager]:
    async with Client(server()) as client:  # (in the test's own task: anyio's scopes)
        yield Manager(client)


async def test_a_text_resource_is_attached_with_secrets_filtered(tmp_path: Path) -> None:
    secrets.note_dotenv({"DOC_TOKEN": SECRET})
    async with connected() as manager:
        got = await attach_for("explain @docs:notes://readme", tmp_path, manager)
    assert got.notes == []
    [a] = got.attachments
    assert a.name == "docs:notes://readme" and a.text.startswith("read me\n")
    assert SECRET not in a.text


async def test_image_resources_are_known_by_their_bytes() -> None:
    async with connected() as manager:
        dot = await read_resource(manager, "docs", "img://dot")
        liar = await read_resource(manager, "docs", "img://liar")
    assert not isinstance(dot, str) and dot.media_type == "image/png" and dot.size == len(PNG)
    assert isinstance(liar, str) and "not an image" in liar


async def test_what_cannot_be_read_is_one_line() -> None:
    async with connected() as manager:
        missing = await read_resource(manager, "docs", "nope://x\x1b[2J")
        huge = await read_resource(manager, "docs", "notes://huge")
        gone = await read_resource(manager, "other", "a://b")
    assert isinstance(missing, str) and "could not read it" in missing
    assert "\x1b" not in missing and "\n" not in missing
    assert isinstance(huge, str) and "too big" in huge
    assert gone == "@other:a://b: MCP server other is not configured; not attached"


async def test_completion_lists_the_resources_a_server_lists() -> None:
    async with connected() as manager:
        listed = sorted(await _resources(manager))
    assert listed == [
        "docs:img://dot", "docs:img://liar", "docs:notes://huge", "docs:notes://readme"]
    assert await _resources(None) == []
