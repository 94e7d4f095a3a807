"""Provider-neutral conversation history. Providers translate it to their wire format."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for.

    `arguments` is the parsed JSON object; when the model sent something that is not a JSON
    object, `arguments` is {} and `arguments_error` says why (the call is then answered with
    an error result, never run).
    """

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""
    arguments_error: str | None = None

    @classmethod
    def from_raw(cls, id: str, name: str, raw: str) -> ToolCall:
        text = raw.strip() or "{}"
        try:
            value = json.loads(text)
        except json.JSONDecodeError as e:
            return cls(id, name, {}, raw, f"arguments are not valid JSON: {e.msg} at char {e.pos}")
        except RecursionError:  # a model (or anyone) can nest deeper than the parser's stack
            return cls(id, name, {}, raw, "arguments are nested too deeply")
        if value is None:  # some servers send `null` for a call without arguments
            return cls(id, name, {}, raw)
        if not isinstance(value, dict):
            return cls(
                id, name, {}, raw, f"arguments must be a JSON object, got {type(value).__name__}"
            )
        return cls(id, name, value, raw)

    def canonical_arguments(self) -> str:
        return canonical_json(self.arguments)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Reasoning:
    """A model's reasoning kept with its assistant message.

    `origin` ("api|provider|model") says where it came from: providers send `items` back only
    to that same origin (each API rejects another's reasoning, and encrypted reasoning is bound
    to the model), so switching model mid-session simply leaves it out. `items` are wire items
    exactly as received, in the reply's order (see each provider's replay); `text` is what the
    user saw in the thinking block.
    """

    origin: str
    text: str = ""
    items: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"origin": self.origin, "text": self.text, "items": list(self.items)}

    @classmethod
    def from_dict(cls, d: Any) -> Reasoning | None:
        if not isinstance(d, dict) or not isinstance(d.get("origin"), str):
            return None  # a record from another kep version: show and send nothing
        items = tuple(i for i in d.get("items") or () if isinstance(i, dict))
        return cls(d["origin"], str(d.get("text") or ""), items)


IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def human_size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / 1024 / 1024:.1f} MiB"


@dataclass(frozen=True)
class ToolImage:
    """An image a tool returned (an MCP ImageContent), checked when it arrived: `media_type`
    is what its bytes are (one of IMAGE_TYPES), `data` its base64, `size` its decoded bytes.

    The tool message's text holds `placeholder()` where the image was, so every text-only
    reader (exports, `kep sessions show`, the tool pane, text-only APIs) shows a short line;
    the APIs that take images in tool results send the image itself after that text."""

    media_type: str
    data: str
    size: int

    def placeholder(self, why: str = "") -> str:
        tail = f" — not sent: {why}" if why else ""
        return f"[image: {self.media_type}, {human_size(self.size)}{tail}]"

    def to_dict(self, data: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {"media_type": self.media_type, "size": self.size}
        if data:
            d["data"] = self.data
        return d

    @classmethod
    def from_dict(cls, d: Any) -> ToolImage | None:
        """None for anything but a stored image of an accepted type (a hand-edited or
        foreign record is left out rather than sent)."""
        if not isinstance(d, dict) or d.get("media_type") not in IMAGE_TYPES:
            return None
        data, size = d.get("data"), d.get("size")
        if not isinstance(data, str) or not data or not isinstance(size, int):
            return None
        return cls(d["media_type"], data, size)


@dataclass(frozen=True)
class Attachment:
    """What an `@` mention attached to a user message, as it was when sent: a project file's
    or an MCP resource's text (already through the secrets filter), or an image (`media_type`
    from its bytes, `data` its base64). Stored whole with the message, so a resumed session
    resends what the model saw then, whatever the file holds now."""

    name: str  # as the user wrote it: a project-relative path or `server:uri`
    text: str = ""
    media_type: str = ""  # set for an image (one of IMAGE_TYPES)
    data: str = ""
    size: int = 0  # bytes of the file or resource

    @property
    def is_image(self) -> bool:
        return bool(self.media_type)

    def chip(self) -> str:
        """The compact line the transcript shows instead of the content."""
        kind = self.media_type if self.is_image else "text"
        return f"📎 {self.name} · {kind}, {human_size(self.size)}"

    def to_dict(self, data: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "size": self.size}
        if self.is_image:
            d["media_type"] = self.media_type
            if data:
                d["data"] = self.data
        else:
            d["text"] = self.text
        return d

    @classmethod
    def from_dict(cls, d: Any) -> Attachment | None:
        """None for a record that is neither a text nor an image of an accepted type."""
        if not isinstance(d, dict) or not isinstance(d.get("name"), str):
            return None
        size = d.get("size") if isinstance(d.get("size"), int) else 0
        if "media_type" in d:
            data = d.get("data")
            if d["media_type"] not in IMAGE_TYPES or not isinstance(data, str) or not data:
                return None
            return cls(d["name"], media_type=d["media_type"], data=data, size=size)
        text = d.get("text")
        return cls(d["name"], text=text, size=size) if isinstance(text, str) else None


@dataclass(frozen=True)
class Message:
    role: Role
    content: str = ""
    # assistant: the calls it made in this message
    tool_calls: tuple[ToolCall, ...] = ()
    # tool: which call this answers, and whether it is an error result
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    # assistant: the reply was cut (user interrupt, stream error)
    interrupted: bool = False
    # image attachments (paths) for user messages, from `.image` statements
    images: tuple[str, ...] = field(default=())
    # assistant: the provider's reasoning (thinking blocks, reasoning items, reasoning_content)
    reasoning: Reasoning | None = None
    # tool: images the tool returned (their placeholders are in `content`)
    tool_images: tuple[ToolImage, ...] = ()
    # user: a compaction summary. The number of messages recorded just before it that stay in
    # the context after it; every earlier one is replaced by this summary (kept in the store).
    summary_keeps: int | None = None
    # user: what its `@` mentions attached (files, resources, images)
    attachments: tuple[Attachment, ...] = ()

    def with_chips(self) -> str:
        """The text as the transcript shows it: then one compact line per attachment (never
        the attached content itself)."""
        return "\n".join([self.content, *(a.chip() for a in self.attachments)])

    def to_dict(self, image_data: bool = True) -> dict[str, Any]:
        """The stored form. `image_data=False` leaves tool images' base64 out (exports and
        `kep run --json` show the placeholder, never the bytes); the session store keeps it,
        once, here."""
        d: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            d["tool_calls"] = [
                {
                    "id": c.id,
                    "name": c.name,
                    "arguments": c.arguments,
                    "raw_arguments": c.raw_arguments,
                }
                for c in self.tool_calls
            ]
        for key in ("tool_call_id", "name"):
            if getattr(self, key):
                d[key] = getattr(self, key)
        if self.is_error:
            d["is_error"] = True
        if self.interrupted:
            d["interrupted"] = True
        if self.images:
            d["images"] = list(self.images)
        if self.reasoning is not None:
            d["reasoning"] = self.reasoning.to_dict()
        if self.tool_images:
            d["tool_images"] = [i.to_dict(image_data) for i in self.tool_images]
        if self.summary_keeps is not None:
            d["summary_keeps"] = self.summary_keeps
        if self.attachments:
            d["attachments"] = [a.to_dict(image_data) for a in self.attachments]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Message:
        calls = tuple(
            ToolCall(c["id"], c["name"], c.get("arguments") or {}, c.get("raw_arguments", ""))
            for c in d.get("tool_calls", ())
        )
        return cls(
            role=d["role"],
            content=d.get("content", ""),
            tool_calls=calls,
            tool_call_id=d.get("tool_call_id"),
            name=d.get("name"),
            is_error=bool(d.get("is_error")),
            interrupted=bool(d.get("interrupted")),
            images=tuple(d.get("images", ())),
            reasoning=Reasoning.from_dict(d.get("reasoning")),
            tool_images=_tool_images(d.get("tool_images")),
            summary_keeps=_keeps(d.get("summary_keeps")),
            attachments=_attachments(d.get("attachments")),
        )


def _attachments(value: Any) -> tuple[Attachment, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(a for a in map(Attachment.from_dict, value) if a is not None)


def _tool_images(value: Any) -> tuple[ToolImage, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(i for i in map(ToolImage.from_dict, value) if i is not None)


def _keeps(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else None
