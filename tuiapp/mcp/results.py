"""An MCP CallToolResult as what a model gets back: text, plus the images it may see.

Text blocks are the result; structured content (when no text came with it) becomes JSON,
with any base64 payload in it replaced by a placeholder; an embedded text resource reaches the
model (up to RESOURCE_CAP). An image that passes tools.images. checks is kept as a
ToolImage, with its placeholder in the text where it was (providers that take images in tool
results send it; the others keep the placeholder); any other image, audio and binary
resources become a placeholder naming their type, size and why. Base64 never reaches the
model as text.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

import mcp.types as types

from tuiapp.tools.images import ImageBudget, estimated_size, sniff
from tuiapp.vocab.messages import ToolImage, human_size

RESOURCE_CAP = 16 * 1024  # characters of one embedded text resource
STRUCTURED_CAP = 16 * 1024  # characters of structured content shown as JSON
_BASE64 = re.compile(r"^[A-Za-z0-9+/\s]{512,}={0,2}$")
_SHORT_BASE64 = re.compile(r"^[A-Za-z0-9+/]{16,}={0,2}$")


def result_parts(result: types.CallToolResult) -> tuple[str, tuple[ToolImage, ...]]:
    """The result's text and the images that may be sent with it."""
    budget = ImageBudget()
    images: list[ToolImage] = []
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.ImageContent):
            taken = budget.take(block.mime_type, block.data)
            if isinstance(taken, ToolImage):
                images.append(taken)
                taken = taken.placeholder()
            if taken:
                parts.append(taken)
        else:
            parts.append(block_text(block))
    if note := budget.overflow_note():
        parts.append(note)
    has_text = any(isinstance(b, types.TextContent) for b in result.content)
    if result.structured_content is not None and not has_text:
        # Servers are asked to mirror structured content in a text block; when one does, the
        # text already says it, so the JSON is added only when it is the whole answer.
        text = json.dumps(without_base64(result.structured_content), ensure_ascii=False, indent=2)
        if len(text) > STRUCTURED_CAP:
            text = (text[:STRUCTURED_CAP]
                    + f"\n… [structured content cut at {STRUCTURED_CAP} characters]")
        parts.insert(0, text)
    return "\n".join(parts), tuple(images)


def without_base64(value: Any) -> Any:
    """Structured content with every long base64 string (an image's bytes, mirrored) replaced
    by a placeholder giving its size."""
    if isinstance(value, dict):
        return {k: without_base64(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_base64(v) for v in value]
    if isinstance(value, str) and (_BASE64.match(value) or _small_image(value)):
        return f"[base64 data, {human_size(estimated_size(value))}]"
    return value


def _small_image(value: str) -> bool:
    """A short string that is an image's base64 (a tiny icon, under 512 characters)."""
    if len(value) >= 512 or not _SHORT_BASE64.match(value):
        return False
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return sniff(raw) is not None


def block_text(block: Any) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.AudioContent):
        return f"[{block.type}: {block.mime_type}, {human_size(estimated_size(block.data))}]"
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        if isinstance(res, types.TextResourceContents):
            mime = f", {res.mime_type}" if res.mime_type else ""
            body = res.text
            if len(body) > RESOURCE_CAP:
                body = (body[:RESOURCE_CAP] + f"\n… [resource cut at {RESOURCE_CAP} of "
                        f"{len(res.text)} characters]")
            return f"[resource: {res.uri}{mime}]\n{body}"
        size = estimated_size(res.blob)
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
