"""An MCP CallToolResult as the text a model gets back.

Text blocks are the result; structured content (when no text came with it) becomes JSON,
with any base64 payload in it replaced by a placeholder; an embedded text resource reaches the
model (up to RESOURCE_CAP); images, audio and binary resources become a short placeholder
naming their type and size, since a tool result is text for every provider kep speaks. Base64
never reaches the model as text.
"""

from __future__ import annotations

import json
import re
from typing import Any

import mcp.types as types

RESOURCE_CAP = 16 * 1024  # characters of one embedded text resource
STRUCTURED_CAP = 16 * 1024  # characters of structured content shown as JSON
_BASE64 = re.compile(r"^[A-Za-z0-9+/\s]{512,}={0,2}$")


def result_text(result: types.CallToolResult) -> str:
    parts = [_block_text(block) for block in result.content]
    has_text = any(isinstance(b, types.TextContent) for b in result.content)
    if result.structured_content is not None and not has_text:
        # Servers are asked to mirror structured content in a text block; when one does, the
        # text already says it, so the JSON is added only when it is the whole answer.
        text = json.dumps(_no_base64(result.structured_content), ensure_ascii=False, indent=2)
        if len(text) > STRUCTURED_CAP:
            text = (text[:STRUCTURED_CAP]
                    + f"\n… [structured content cut at {STRUCTURED_CAP} characters]")
        parts.insert(0, text)
    return "\n".join(parts)


def _no_base64(value: Any) -> Any:
    """Structured content with every long base64 string (an image's bytes, mirrored) replaced
    by a placeholder giving its size."""
    if isinstance(value, dict):
        return {k: _no_base64(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_base64(v) for v in value]
    if isinstance(value, str) and len(value) >= 512 and _BASE64.match(value):
        return f"[base64 data, {human_size(_b64_size(value))}]"
    return value


def _block_text(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        return f"[{block.type}: {block.mime_type}, {human_size(_b64_size(block.data))}]"
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        if isinstance(res, types.TextResourceContents):
            mime = f", {res.mime_type}" if res.mime_type else ""
            body = res.text
            if len(body) > RESOURCE_CAP:
                body = (body[:RESOURCE_CAP] + f"\n… [resource cut at {RESOURCE_CAP} of "
                        f"{len(res.text)} characters]")
            return f"[resource: {res.uri}{mime}]\n{body}"
        size = _b64_size(res.blob)
        mime = f"{res.mime_type}, " if res.mime_type else ""
        return f"[resource: {res.uri}, {mime}{human_size(size)}]"
    if isinstance(block, types.ResourceLink):
        bits = [str(block.uri)]
        if block.mime_type:
            bits.append(block.mime_type)
        if block.size is not None:
            bits.append(human_size(block.size))
        return f"[resource link: {', '.join(bits)}]"
    return f"[{getattr(block, 'type', type(block).__name__)} content]"


def _b64_size(data: str) -> int:
    data = data.strip()
    return max(0, len(data) * 3 // 4 - data[-2:].count("="))


def human_size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / 1024 / 1024:.1f} MiB"
