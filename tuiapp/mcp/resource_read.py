"""`resources/read` of one MCP resource for an `@server:uri` mention: its text (through the
secrets filter) or an image, as an Attachment, or one line saying why not. Listing, templates
and subscriptions live elsewhere (mcp.resources); this is only the read."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from tuiapp.security import secrets
from tuiapp.tools.images import MAX_IMAGE_B64, sniff
from tuiapp.vocab.messages import Attachment, human_size

TEXT_CAP = 256 * 1024  # as for a project file (conversation.mentions)
READ_TIMEOUT = 30.0


def _one_line(text: str, limit: int = 200) -> str:
    """Foreign text (a URI, a server's error) kept to one short line of ours."""
    text = text if text.isprintable() else text.encode("unicode_escape").decode("ascii")
    return text if len(text) <= limit else text[:limit] + "…"


def _label(server: str, uri: str) -> str:
    return _one_line(f"{server}:{uri}")


async def read_resource(manager: Any, server: str, uri: str) -> Attachment | str:
    """Read `uri` from the connected server `server` (an McpManager's connection)."""
    label = _label(server, uri)
    conn = manager.connection(server) if manager is not None else None
    client = conn.client if conn is not None else None
    if client is None:
        state = conn.state.describe() if conn is not None else "not configured"
        return f"@{label}: MCP server {server} is {state}; not attached"
    try:
        result = await client.read_resource(uri)
    except Exception as e:  # an MCPError, a broken pipe, a malformed answer: one line
        why = _one_line(str(e) or type(e).__name__)
        return f"@{label}: MCP server {server} could not read it: {why}"
    return from_contents(label, getattr(result, "contents", None) or [])


def from_contents(label: str, contents: list[Any]) -> Attachment | str:
    """The first image, else the texts joined; a blob that is no image is refused."""
    texts: list[str] = []
    for c in contents:
        blob = getattr(c, "blob", None)
        if isinstance(blob, str):
            if len(blob) > MAX_IMAGE_B64:
                return f"@{label}: too big ({human_size(len(blob) * 3 // 4)}); not attached"
            try:
                raw = base64.b64decode(blob, validate=True)
            except (binascii.Error, ValueError):
                return f"@{label}: the server sent invalid base64; not attached"
            media = sniff(raw)
            if media is None:
                return f"@{label}: binary content that is not an image; not attached"
            return Attachment(label, media_type=media, data=base64.b64encode(raw).decode(),
                              size=len(raw))
        text = getattr(c, "text", None)
        if isinstance(text, str):
            texts.append(text)
    text = "\n".join(texts)
    size = len(text.encode("utf-8", "replace"))
    if size > TEXT_CAP:
        return f"@{label}: too big to attach ({human_size(size)}; at most {human_size(TEXT_CAP)})"
    if not contents:
        return f"@{label}: the server returned nothing; not attached"
    return Attachment(label, text=secrets.active().redact(text), size=size)
