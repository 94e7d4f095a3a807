"""The shapes OpenAI-compatible servers put in a Chat Completions delta, beyond plain strings.

- `content` as a list of typed parts (Mistral magistral): `{"type": "text", "text": …}`,
  `{"type": "thinking", "thinking": [{"type": "text", "text": …}]}`, `{"type": "reasoning", …}`.
- reasoning as its own field: `reasoning_content` (DeepSeek, vLLM, llama.cpp), `reasoning`
  (OpenRouter, Ollama), `reasoning_details` (OpenRouter: a list of typed pieces with an index,
  some signed or encrypted).

A server that sent a reasoning field gets the same field back on the assistant message (DeepSeek
answers 400 without its `reasoning_content` next to the tool calls; OpenRouter wants its
`reasoning_details` back to continue a tool loop). Nothing is sent to any other server.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# A delta may carry the same thought under several names (OpenRouter sends `reasoning` and
# `reasoning_details` side by side): the first present is shown, every one is kept.
STRING_FIELDS = ("reasoning_content", "reasoning")
DETAIL_TEXT_KEYS = ("text", "summary")


def field_of(obj: Any, key: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(key)
    value = getattr(obj, key, None)
    if value is None:  # pydantic keeps unknown fields aside
        extra = getattr(obj, "model_extra", None) or {}
        value = extra.get(key)
    return value


def _part_text(value: Any) -> str:
    """Text of a part's payload: a string, a list of parts, or a part."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(_part_text(v) for v in value)
    if isinstance(value, dict):
        return _part_text(value.get("text") or value.get("thinking") or value.get("reasoning"))
    return ""


def split_content(content: Any) -> tuple[str, str]:
    """(answer text, reasoning text) of a delta's `content`, whatever its shape."""
    if content is None:
        return "", ""
    if isinstance(content, str):
        return content, ""
    parts = content if isinstance(content, list) else [content]
    text: list[str] = []
    thought: list[str] = []
    for part in parts:
        if isinstance(part, str):
            text.append(part)
            continue
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in ("thinking", "reasoning"):
            thought.append(_part_text(part.get(kind) if kind in part else part.get("text")))
        elif kind in (None, "text", "output_text"):
            text.append(_part_text(part.get("text")))
        # other parts (images, references…) have no text to show
    return "".join(text), "".join(thought)


@dataclass
class ReasoningFields:
    """Reasoning gathered from a stream's deltas, per field name, as the server sent it."""

    strings: dict[str, list[str]] = field(default_factory=dict)
    details: dict[int, dict[str, Any]] = field(default_factory=dict)

    def add(self, delta: Any) -> str:
        """Take a delta's reasoning fields; return the text to show."""
        shown = ""
        for name in STRING_FIELDS:
            value = field_of(delta, name)
            if isinstance(value, str) and value:
                self.strings.setdefault(name, []).append(value)
                shown = shown or value
        details = field_of(delta, "reasoning_details")
        if isinstance(details, list):
            text = self._add_details(details)
            shown = shown or text
        return shown

    def _add_details(self, pieces: list[Any]) -> str:
        shown: list[str] = []
        for n, piece in enumerate(pieces):
            if not isinstance(piece, dict):
                continue
            index = piece.get("index")
            index = index if isinstance(index, int) else len(self.details) + n
            kept = self.details.setdefault(index, {})
            for key, value in piece.items():
                if key in (*DETAIL_TEXT_KEYS, "data", "signature") and isinstance(value, str):
                    kept[key] = kept.get(key, "") + value  # streamed in pieces
                    if key in DETAIL_TEXT_KEYS:
                        shown.append(value)
                elif value is not None:
                    kept[key] = value
        return "".join(shown)

    def items(self) -> tuple[dict[str, Any], ...]:
        """What goes back on the assistant message: {"field": name, "value": …} each."""
        out = [{"field": name, "value": "".join(parts)} for name, parts in self.strings.items()]
        if self.details:
            out.append({"field": "reasoning_details",
                        "value": [self.details[i] for i in sorted(self.details)]})
        return tuple(out)


def message_fields(items: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    """The fields a stored reply's reasoning adds to its assistant message."""
    out: dict[str, Any] = {}
    for item in items:
        name = item.get("field")
        if name in (*STRING_FIELDS, "reasoning_details") and item.get("value") is not None:
            out[name] = item["value"]
    return out


def call_extras(items: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    """Call id → the `extra_content` its server put on it (Gemini's thought signature)."""
    return {i["id"]: i["value"] for i in items
            if i.get("field") == "extra_content" and isinstance(i.get("id"), str)
            and isinstance(i.get("value"), dict)}
