"""An MCP CallToolResult as the text a model gets back.

Text blocks are the result; structured content (when no text came with it) becomes JSON;
images, audio and resources become a short placeholder naming their type and size, since a
tool result is text for every provider kep speaks.
"""

from __future__ import annotations

import json
from typing import Any

import mcp.types as types


def result_text(result: types.CallToolResult) -> str:
    parts = [_block_text(block) for block in result.content]
    has_text = any(isinstance(b, types.TextContent) for b in result.content)
    if result.structured_content is not None and not has_text:
        # Servers are asked to mirror structured content in a text block; when one does, the
        # text already says it, so the JSON is added only when it is the whole answer.
        parts.insert(0, json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    return "\n".join(parts)


def _block_text(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        return f"[{block.type}: {block.mime_type}, {human_size(_b64_size(block.data))}]"
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        if isinstance(res, types.TextResourceContents):
            size = len(res.text.encode())
        else:
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
