"""What a server's prompts/list says of each prompt beyond its name: its description and its
arguments, so that a prompt can be offered as a command with them (the TUI's `/NAME`).
Fetched with the names, once the server is ready; a failure here only leaves them out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_PAGES = 10
TEXT_CAP = 300  # characters of a description or an argument's description


@dataclass(frozen=True)
class PromptArg:
    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True)
class PromptInfo:
    name: str
    description: str = ""
    arguments: tuple[PromptArg, ...] = ()


def _text(value: object) -> str:
    return str(value or "")[:TEXT_CAP]


def _info(prompt: Any) -> PromptInfo:
    args = tuple(PromptArg(_text(getattr(a, "name", "")), _text(getattr(a, "description", "")),
                           bool(getattr(a, "required", False)))
                 for a in (getattr(prompt, "arguments", None) or ()))
    return PromptInfo(_text(getattr(prompt, "name", "")),
                      _text(getattr(prompt, "description", "")), args)


async def fetch(client: Any) -> tuple[PromptInfo, ...]:
    try:
        if getattr(client.server_capabilities, "prompts", None) is None:
            return ()
    except Exception:
        return ()
    out: list[PromptInfo] = []
    cursor = None
    try:
        for _ in range(MAX_PAGES):
            page = await client.list_prompts(cursor=cursor)
            out += [_info(p) for p in getattr(page, "prompts", [])]
            cursor = getattr(page, "next_cursor", None)
            if not cursor:
                break
    except Exception:
        pass  # a server that advertises but cannot list: what came
    return tuple(out)
