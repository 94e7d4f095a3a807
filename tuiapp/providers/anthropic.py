"""Anthropic Messages API, streamed through the official SDK.

Messages must alternate user/assistant, so consecutive same-role messages are merged: the tool
results of one step travel as ONE user message of `tool_result` blocks (errors flagged
`is_error`). The `system` prompt is the top-level `system` parameter.

Extended thinking (`reasoning` set): the `thinking` / `redacted_thinking` blocks, with their
signatures, go back unchanged and in their place before `tool_use` in the assistant turn; the
API rejects a tool loop without them. They are kept in the message's Reasoning (the reply's
blocks in order) and replayed only to the model they came from.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

from tuiapp.providers.base import ProviderFailure, StreamEnd, StreamItem
from tuiapp.providers.wire import (
    SdkProvider,
    attachment_text,
    clean_history,
    images_to_send,
    load_image,
    not_sent,
    object_schema,
    path_key,
    result_with_images,
    user_image_note,
)
from tuiapp.settings.config_types import ProviderConfig
from tuiapp.vocab.events import ReasoningDelta, TextDelta, Usage
from tuiapp.vocab.messages import Message, Reasoning, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

DEFAULT_URL = "https://api.anthropic.com"
# Messages requires max_tokens. Models with a lower ceiling answer 400 "max_tokens: N > M…":
# we then retry once with M and remember it.
DEFAULT_MAX_TOKENS = 8192
MAX_TOKENS_LIMIT = re.compile(r"max_tokens: \d+ > (\d+)")
STOP = {"stop_sequence": "end_turn", "model_context_window_exceeded": "max_tokens"}
THINKING_BUDGET = {"low": 2048, "medium": 8192, "high": 24576}
# Models that take a thinking budget; later ones think "adaptive"ly at an `effort` (the API
# deprecates budgets for them). A model that refuses one form gets the other, once.
BUDGET_MODELS = re.compile(r"claude-(3-7-sonnet|(sonnet|opus)-4-(0|1|5|2025)|haiku-4-5)")
# Models that refuse `thinking: disabled` and take `between_tools` as their lowest setting
# (Sonnet 5.5 on); any other model that answers 400 naming between_tools is switched once.
BETWEEN_TOOLS_MODELS = re.compile(r"claude-sonnet-5-5")
MIN_BUDGET = 1024  # the API's minimum
THINKING_BLOCKS = ("thinking", "redacted_thinking")
USAGE_FIELDS = ("output_tokens", "input_tokens", "cache_read_input_tokens",
                "cache_creation_input_tokens")


def _tool_use(c: ToolCall) -> dict[str, Any]:
    return {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}


def _assistant_blocks(m: Message, origin: str) -> list[dict[str, Any]]:
    if m.reasoning is None or m.reasoning.origin != origin:
        blocks = [{"type": "text", "text": m.content}] if m.content else []
        return blocks + [_tool_use(c) for c in m.tool_calls]
    # This model's own reply: its blocks as they came (thinking first, signatures intact).
    calls = {c.id: c for c in m.tool_calls}
    out: list[dict[str, Any]] = []
    for block in m.reasoning.items:
        kind = block.get("type")
        if kind in THINKING_BLOCKS:
            out.append(dict(block))
        elif kind == "text" and block.get("text"):
            out.append({"type": "text", "text": block["text"]})
        elif kind == "tool_use" and (call := calls.pop(block.get("id"), None)):
            out.append(_tool_use(call))
    return out + [_tool_use(c) for c in calls.values()]


def to_messages(messages: Sequence[Message], origin: str = "") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    history = clean_history(messages)
    keep = images_to_send(history)
    for m in history:
        if m.role == "user":
            add("user", _user_blocks(m, keep))
        elif m.role == "assistant":
            add("assistant", _assistant_blocks(m, origin))
        elif m.role == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": m.tool_call_id,
                "content": _result_content(m, keep),
            }
            if m.is_error:
                result["is_error"] = True
            add("user", [result])
    return out


def _result_content(m: Message, keep: set[object]) -> str | list[dict[str, Any]]:
    """A tool result: its text, then the images it returned (the text holds their
    placeholders, which caption them)."""
    text, images = result_with_images(m, keep)
    if not images:
        return text or "(no output)"
    return [{"type": "text", "text": text or "(no output)"}, *(
        {"type": "image", "source": {"type": "base64", "media_type": i.media_type,
                                     "data": i.data}} for i in images)]


def _user_blocks(m: Message, keep: set[object]) -> list[dict[str, Any]]:
    # Attachments and images first: Anthropic recommends documents before the question.
    # An image images_to_send left out is named by a note instead.
    blocks: list[dict[str, Any]] = []
    notes: list[str] = []
    for a in m.attachments:
        if a.is_image and id(a) in keep:
            blocks.append({"type": "image", "source": {"type": "base64",
                                                       "media_type": a.media_type,
                                                       "data": a.data}})
        elif a.is_image:
            notes.append(not_sent(a.name))
        else:
            blocks.append({"type": "text", "text": attachment_text(a)})
    for i, path in enumerate(m.images):
        image = load_image(path) if path_key(m, i) in keep else None
        if image is None:
            notes.append(user_image_note(m, i, keep))
        else:
            source = {"type": "base64", "media_type": image[0], "data": image[1]}
            blocks.append({"type": "image", "source": source})
    text = "\n".join([*notes, m.content] if m.content else notes)
    if text:
        blocks.append({"type": "text", "text": text})
    return blocks


def to_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": object_schema(t.parameters)}
        for t in tools
    ]


def system_text(messages: Sequence[Message], system: str | None) -> str:
    """History system messages have no place among Messages turns: they join `system`."""
    parts = [system] if system else []
    parts += [m.content for m in messages if m.role == "system" and m.content]
    return "\n\n".join(parts)


class AnthropicProvider(SdkProvider):
    default_url = DEFAULT_URL

    def __init__(self, config: ProviderConfig, model: str) -> None:
        super().__init__(config, model)
        self.max_tokens = DEFAULT_MAX_TOKENS
        self.model_limit: int | None = None  # learnt from a 400 "max_tokens: N > M"
        self.adaptive = not BUDGET_MODELS.match(model)
        self._flipped = False  # the thinking form was switched after a 400
        self.off_form = "between_tools" if BETWEEN_TOOLS_MODELS.match(model) else "disabled"

    def _client_class(self) -> Any:
        from anthropic import AsyncAnthropic  # lazy: ~1-2 s of import

        return AsyncAnthropic

    def _limits(self) -> dict[str, Any]:
        """max_tokens (the session's max_output_tokens when set; the Messages API of SDK 2
        has no temperature), and `thinking` for the reasoning level (its budget must stay
        below max_tokens, so the budget is capped by the model's limit)."""
        if self.max_output_tokens is not None:
            self.max_tokens = min(self.max_output_tokens, self.model_limit or 10**9)
        if self.reasoning == "off":
            return {"max_tokens": self.max_tokens, "thinking": {"type": self.off_form}}
        budget = THINKING_BUDGET.get(self.reasoning or "")
        if budget is None:
            return {"max_tokens": self.max_tokens}
        if self.adaptive:
            return {"max_tokens": self.model_limit or max(self.max_tokens, budget * 2),
                    "thinking": {"type": "adaptive"},
                    "output_config": {"effort": self.reasoning}}
        max_tokens = self.model_limit or max(self.max_tokens, budget + DEFAULT_MAX_TOKENS)
        budget = max(MIN_BUDGET, min(budget, max_tokens - MIN_BUDGET))
        return {"max_tokens": max_tokens,
                "thinking": {"type": "enabled", "budget_tokens": budget}}

    async def _open(self, kwargs: dict[str, Any]) -> Any:
        client = self._get_client()
        try:
            for _ in range(2):
                limits = self._limits()
                try:
                    return await client.messages.create(**kwargs, **limits)
                except Exception as e:
                    text = str(e)
                    limit = MAX_TOKENS_LIMIT.search(text)
                    if getattr(e, "status_code", None) != 400:
                        raise
                    if limit is not None:
                        self.model_limit = int(limit.group(1))
                        self.max_tokens = min(self.max_tokens, self.model_limit)
                    elif (limits.get("thinking", {}).get("type") == "disabled"
                          and "between_tools" in text):
                        self.off_form = "between_tools"
                    elif (not self._flipped and limits.get("thinking", {}).get("type")
                          in ("enabled", "adaptive")
                          and re.search(r"thinking|budget_tokens|output_config|effort", text)):
                        self._flipped, self.adaptive = True, not self.adaptive
                    else:
                        raise
            return await client.messages.create(**kwargs, **self._limits())
        except Exception as e:
            raise self._fail(e) from e

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str | None
    ) -> AsyncIterator[StreamItem]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": to_messages(messages, self.origin),
            "stream": True,
        }
        if system_prompt := system_text(messages, system):
            kwargs["system"] = system_prompt
        if tools:
            kwargs["tools"] = to_tools(tools)
        events = await self._open(kwargs)

        blocks: dict[int, tuple[str, str, list[str]]] = {}  # index → tool id, name, json parts
        open_blocks: dict[int, dict[str, Any]] = {}  # index → thinking / text block so far
        kept: list[dict[str, Any]] = []  # the reply's blocks in order, for the next request
        shown: list[str] = []
        stop: str | None = None
        done = False
        counts: dict[str, int] = {}
        try:
            async for ev in events:
                kind = ev.type
                if kind == "content_block_delta":
                    delta = ev.delta
                    block = open_blocks.get(ev.index)
                    if delta.type == "text_delta" and delta.text:
                        if block is not None:
                            block["text"] += delta.text
                        yield TextDelta(delta.text)
                    elif delta.type == "input_json_delta" and ev.index in blocks:
                        blocks[ev.index][2].append(delta.partial_json or "")
                    elif delta.type == "thinking_delta" and block is not None:
                        block["thinking"] += delta.thinking
                        shown.append(delta.thinking)
                        yield ReasoningDelta(delta.thinking)
                    elif delta.type == "signature_delta" and block is not None:
                        block["signature"] = block.get("signature", "") + delta.signature
                elif kind == "content_block_start":
                    cb = ev.content_block
                    if cb.type == "tool_use":
                        blocks[ev.index] = (cb.id, cb.name, [])
                    elif cb.type in (*THINKING_BLOCKS, "text"):
                        open_blocks[ev.index] = cb.model_dump(mode="json", exclude_none=True)
                elif kind == "content_block_stop" and ev.index in blocks:
                    call_id, name, parts = blocks.pop(ev.index)
                    kept.append({"type": "tool_use", "id": call_id})
                    yield ToolCall.from_raw(call_id, name, "".join(parts))
                elif kind == "content_block_stop" and ev.index in open_blocks:
                    block = open_blocks.pop(ev.index)
                    kept.append({k: v for k, v in block.items() if k != "citations"})
                    if block["type"] == "thinking" and shown and not shown[-1].endswith("\n"):
                        shown.append("\n\n")
                elif kind == "message_start":
                    self._usage(ev.message.usage, counts)
                elif kind == "message_delta":
                    stop = ev.delta.stop_reason or stop
                    self._usage(ev.usage, counts)
                elif kind == "message_stop":
                    done = True
        except Exception as e:
            raise self._fail(e, streaming=True) from e
        finally:
            await events.close()
        if not done:
            raise ProviderFailure(
                f"{self.config.name}: the stream ended before the reply was complete",
                retryable=True,
            )
        if any(b["type"] in THINKING_BLOCKS for b in kept):
            yield Reasoning(self.origin, "".join(shown).strip(), tuple(kept))
        # Anthropic counts cache reads and writes apart from input_tokens; kep's input is all.
        cached = counts.get("cache_read_input_tokens", 0)
        yield Usage(sum(counts.get(k, 0) for k in USAGE_FIELDS[1:]),
                    counts.get("output_tokens", 0), cached)
        stop = stop or "end_turn"
        yield StreamEnd(STOP.get(stop, stop))

    @staticmethod
    def _usage(u: Any, counts: dict[str, int]) -> dict[str, int]:
        """message_delta repeats (cumulatively) what message_start said; a field it leaves
        out keeps its earlier value."""
        for name in USAGE_FIELDS:
            value = getattr(u, name, None)
            if isinstance(value, int):
                counts[name] = value
        return counts
