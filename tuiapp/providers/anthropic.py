"""Anthropic Messages API, streamed through the official SDK.

Messages must alternate user/assistant, so consecutive same-role messages are merged: the tool
results of one step travel as ONE user message of `tool_result` blocks (errors flagged
`is_error`). The `system` prompt is the top-level `system` parameter.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

from tuiapp.config import ProviderConfig
from tuiapp.core.events import TextDelta, Usage
from tuiapp.core.messages import Message, ToolCall
from tuiapp.providers.base import ProviderFailure, StreamEnd, StreamItem
from tuiapp.providers.wire import (
    SdkProvider,
    clean_history,
    image_note,
    load_image,
    object_schema,
)
from tuiapp.tools.model import ToolSpec

DEFAULT_URL = "https://api.anthropic.com"
# Messages requires max_tokens. Models with a lower ceiling answer 400 "max_tokens: N > M…":
# we then retry once with M and remember it.
DEFAULT_MAX_TOKENS = 8192
MAX_TOKENS_LIMIT = re.compile(r"max_tokens: \d+ > (\d+)")
STOP = {"stop_sequence": "end_turn", "model_context_window_exceeded": "max_tokens"}


def to_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in clean_history(messages):
        if m.role == "user":
            add("user", _user_blocks(m))
        elif m.role == "assistant":
            blocks = [{"type": "text", "text": m.content}] if m.content else []
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in m.tool_calls
            ]
            add("assistant", blocks)
        elif m.role == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": m.tool_call_id,
                "content": m.content or "(no output)",
            }
            if m.is_error:
                result["is_error"] = True
            add("user", [result])
    return out


def _user_blocks(m: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    notes: list[str] = []
    for path in m.images:  # images first: Anthropic recommends them before the question
        image = load_image(path)
        if image is None:
            notes.append(image_note(path))
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

    def _client_class(self) -> Any:
        from anthropic import AsyncAnthropic  # lazy: ~1-2 s of import

        return AsyncAnthropic

    async def _open(self, kwargs: dict[str, Any]) -> Any:
        client = self._get_client()
        try:
            try:
                return await client.messages.create(**kwargs, max_tokens=self.max_tokens)
            except Exception as e:
                limit = MAX_TOKENS_LIMIT.search(str(e))
                if getattr(e, "status_code", None) != 400 or limit is None:
                    raise
                self.max_tokens = int(limit.group(1))
            return await client.messages.create(**kwargs, max_tokens=self.max_tokens)
        except Exception as e:
            raise self._fail(e) from e

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str | None
    ) -> AsyncIterator[StreamItem]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": to_messages(messages),
            "stream": True,
        }
        if system_prompt := system_text(messages, system):
            kwargs["system"] = system_prompt
        if tools:
            kwargs["tools"] = to_tools(tools)
        events = await self._open(kwargs)

        blocks: dict[int, tuple[str, str, list[str]]] = {}  # index → tool id, name, json parts
        stop: str | None = None
        done = False
        input_tokens = output_tokens = 0
        try:
            async for ev in events:
                kind = ev.type
                if kind == "content_block_delta":
                    delta = ev.delta
                    if delta.type == "text_delta" and delta.text:
                        yield TextDelta(delta.text)
                    elif delta.type == "input_json_delta" and ev.index in blocks:
                        blocks[ev.index][2].append(delta.partial_json or "")
                elif kind == "content_block_start" and ev.content_block.type == "tool_use":
                    blocks[ev.index] = (ev.content_block.id, ev.content_block.name, [])
                elif kind == "content_block_stop" and ev.index in blocks:
                    call_id, name, parts = blocks.pop(ev.index)
                    yield ToolCall.from_raw(call_id, name, "".join(parts))
                elif kind == "message_start":
                    input_tokens = ev.message.usage.input_tokens or 0
                    output_tokens = ev.message.usage.output_tokens or 0
                elif kind == "message_delta":
                    stop = ev.delta.stop_reason or stop
                    output_tokens = ev.usage.output_tokens or output_tokens
                    input_tokens = getattr(ev.usage, "input_tokens", None) or input_tokens
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
        yield Usage(input_tokens, output_tokens)
        stop = stop or "end_turn"
        yield StreamEnd(STOP.get(stop, stop))
