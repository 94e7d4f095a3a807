"""What the functions panel and `kep functions` know of one MCP server."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tuiapp.mcp.prompt_info import PromptInfo

ServerStatus = Literal["starting", "ready", "failed", "exited", "disabled"]


@dataclass(frozen=True)
class ServerState:
    name: str
    status: ServerStatus
    tools: int = 0
    reason: str = ""
    log_path: str = ""
    resources: tuple[str, ...] = ()  # resources/list: names (or URIs)
    prompts: tuple[str, ...] = ()  # prompts/list: names
    prompt_info: tuple[PromptInfo, ...] = ()  # and their descriptions and arguments

    def describe(self) -> str:
        """"ready (3 tools)", "failed (why)", "exited (why)", "starting", "disabled"."""
        if self.status == "ready":
            return f"ready ({self.summary()})"
        return f"{self.status} ({self.reason})" if self.reason else self.status

    def summary(self) -> str:
        """"3 tools", "3 tools, 2 resources (a, b), 1 prompt (review)"."""
        parts = [_count(self.tools, "tool")]
        for items, word in ((self.resources, "resource"), (self.prompts, "prompt")):
            if items:
                shown = ", ".join(items[:MAX_NAMED]) + (", …" if len(items) > MAX_NAMED else "")
                parts.append(f"{_count(len(items), word)} ({shown})")
        return ", ".join(parts)


MAX_NAMED = 5


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
