"""A server's resources/list and prompts/list, for the functions panel: names only, fetched
once the server is ready, when it says it has them. A failure here never fails the server."""

from __future__ import annotations

from typing import Any

MAX_PAGES = 10


async def fetch(client: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    try:
        caps = client.server_capabilities
    except Exception:
        return (), ()
    resources: list[str] = []
    prompts: list[str] = []
    if getattr(caps, "resources", None) is not None:
        resources = await _pages(client.list_resources, "resources",
                                 lambda r: r.name or str(r.uri))
    if getattr(caps, "prompts", None) is not None:
        prompts = await _pages(client.list_prompts, "prompts", lambda p: p.name)
    return tuple(resources), tuple(prompts)


async def _pages(call: Any, field: str, name: Any) -> list[str]:
    out: list[str] = []
    cursor = None
    try:
        for _ in range(MAX_PAGES):
            page = await call(cursor=cursor)
            out += [str(name(x)) for x in getattr(page, field, [])]
            cursor = getattr(page, "next_cursor", None)
            if not cursor:
                break
    except Exception:
        pass  # a server that advertises but cannot list: show what came
    return out
