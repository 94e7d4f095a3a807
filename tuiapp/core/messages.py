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

    def to_dict(self) -> dict[str, Any]:
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
        )
