"""Starting a session from an MCP server's prompt (prompts/get), as a `.prompt` file starts one.

`kep run --prompt mcp:SERVER/NAME --set arg=value` (and the palette's MCP prompt entries):
the server's messages open the conversation, the last user message is sent, every session
tool stays available. The prompt's arguments are the `--set` values; the server says which
are missing. No textual here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuiapp.conversation.prompt_model import PromptError, PromptFile
from tuiapp.vocab.messages import Message

if TYPE_CHECKING:
    from tuiapp.conversation.conversation import Conversation
    from tuiapp.project.workspace import Workspace

PREFIX = "mcp:"
TEXT_CAP = 64 * 1024  # characters of one message block


def parse(ref: str) -> tuple[str, str] | None:
    """`mcp:SERVER/NAME` → (server, name); None when `ref` is not an MCP prompt."""
    if not ref.startswith(PREFIX):
        return None
    server, slash, name = ref[len(PREFIX):].partition("/")
    return (server, name) if slash and server and name else None


class McpPromptRun:
    """What StartPlan needs of a prompt run, for a prompt that lives on an MCP server."""

    def __init__(self, ws: Workspace, server: str, name: str, values: Mapping[str, str]) -> None:
        self.ws, self.server, self.name = ws, server, name
        self.values = {k: str(v) for k, v in values.items()}
        self.notices: list[str] = []
        self.where = f"{PREFIX}{server}/{name}"
        # No variables of its own: the server checks the arguments when the prompt is fetched.
        self.prompt = PromptFile(Path(self.where), [])

    def allow_only(self, name: str) -> bool:
        return True  # an MCP prompt does not narrow the tools

    def system_text(self) -> str:
        return ""

    def check(self) -> None:
        mcp = self.ws.mcp
        if mcp is None or self.server not in mcp.states():
            raise PromptError(self.where, 0, "", f"no MCP server {self.server!r} is configured")

    async def run(self, conv: Conversation) -> str:
        messages = await self._fetch()
        if not messages:
            raise PromptError(self.where, 0, "", "the server's prompt has no messages")
        *before, last = messages
        for role, text in before:
            conv.history.append(Message(role, text))  # type: ignore[arg-type]
        if last[0] == "user":
            return await conv.turn(last[1])
        conv.history.append(Message(last[0], last[1]))  # type: ignore[arg-type]
        return "end_turn"

    async def _fetch(self) -> list[tuple[str, str]]:
        mcp = self.ws.mcp
        assert mcp is not None
        server = mcp.connection(self.server)
        if server is None:
            raise PromptError(self.where, 0, "", f"no MCP server {self.server!r} is configured")
        deadline = asyncio.get_running_loop().time() + server.cfg.startup_timeout
        while server.state.status == "starting" and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        client = server.client
        if client is None:
            raise PromptError(self.where, 0, "", f"MCP server {self.server} is "
                              f"{server.state.describe()}")
        try:
            result = await client.get_prompt(self.name, arguments=self.values or None)
        except Exception as e:  # the server's own words: a missing argument, an unknown name
            raise PromptError(self.where, 0, "", f"prompts/get failed: {e}") from None
        return [(m.role, _text(m.content)) for m in result.messages]


def _text(block: Any) -> str:
    from tuiapp.mcp.results import block_text  # one place turns MCP content into text

    text = block_text(block)
    return text if len(text) <= TEXT_CAP else text[:TEXT_CAP] + "\n… [cut]"
