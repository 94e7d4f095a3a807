"""Resources attached to the next message: read when picked (capped, in the background),
held until the user sends, then put before the message's text, each marked with its server
and URI so the model knows where it came from."""

from __future__ import annotations

from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from tuiapp.ui.literal import say, shown

if TYPE_CHECKING:
    from textual.app import App

    from tuiapp.mcp.resources import ResourceText
    from tuiapp.ui.app_api import KepApp

_pending: WeakKeyDictionary[App[int], list[tuple[str, ResourceText]]] = WeakKeyDictionary()


def pending(app: App[int]) -> list[tuple[str, ResourceText]]:
    return _pending.setdefault(app, [])


async def attach(app: KepApp, server: str, uri: str) -> None:
    if app.ws.mcp is None:
        return
    from tuiapp.mcp.client import McpRequestError  # with a server: the SDK is loaded already
    try:
        got = await app.ws.mcp.read_resource(server, uri)
    except McpRequestError as e:
        app.notify(shown(say("could not read {}: {}", uri, str(e))), severity="error",
                   markup=False)
        return
    pending(app).append((server, got))
    cut = " (cut: too long)" if got.truncated else ""
    app.notify(shown(say("attached {} ({} characters){} to the next message", uri,
                         len(got.text), cut)), markup=False)


async def subscribe(app: KepApp, server: str, uri: str) -> None:
    if app.ws.mcp is None:
        return
    from tuiapp.mcp.client import McpRequestError  # with a server: the SDK is loaded already
    try:
        await app.ws.mcp.subscribe(server, uri)
    except McpRequestError as e:
        app.notify(shown(say("could not subscribe to {}: {}", uri, str(e))), severity="error",
                   markup=False)
        return
    app.notify(shown(say("subscribed to {}: its updates are shown as notices", uri)),
               markup=False)


def take(app: App[int], text: str) -> str:
    """The message with the attached resources before it (and none held any more)."""
    held = _pending.pop(app, [])
    if not held:
        return text
    blocks = [f'<resource server="{server}" uri="{r.uri}"'
              f'{f" mime={chr(34)}{r.mime}{chr(34)}" if r.mime else ""}>\n{r.text}\n</resource>'
              for server, r in held]
    return "\n\n".join([*blocks, text])
