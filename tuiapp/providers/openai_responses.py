"""OpenAI Responses API (the `openai/…` models), streamed through the official SDK.

kep keeps the whole history itself, so every request is stateless (`store=False`) and carries
the conversation as input items: messages, `function_call` and `function_call_output`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from tuiapp.core.events import TextDelta, Usage
from tuiapp.core.messages import Message, ToolCall
from tuiapp.providers.base import ProviderFailure, StreamEnd, StreamItem
from tuiapp.providers.wire import (
    SdkProvider,
    call_arguments_json,
    clean_history,
    object_schema,
    text_then_images,
)
from tuiapp.tools.model import ToolSpec

DEFAULT_URL = "https://api.openai.com/v1"
INCOMPLETE_REASONS = {"max_output_tokens": "max_tokens"}


def to_input(messages: Sequence[Message]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for m in clean_history(messages):
        if m.role == "user":
            items.append({"role": "user", "content": _user_content(m)})
        elif m.role == "system":
            items.append({"role": "system", "content": m.content})
        elif m.role == "assistant":
            if m.content:
                items.append({"role": "assistant", "content": m.content})
            items += [
                {
                    "type": "function_call",
                    "call_id": c.id,
                    "name": c.name,
                    "arguments": call_arguments_json(c.arguments),
                }
                for c in m.tool_calls
            ]
        elif m.role == "tool":
            items.append(
                {"type": "function_call_output", "call_id": m.tool_call_id, "output": m.content}
            )
    return items


def _user_content(m: Message) -> str | list[dict[str, Any]]:
    return text_then_images(
        m, lambda text: {"type": "input_text", "text": text},
        lambda media, data: {"type": "input_image", "detail": "auto",
                             "image_url": f"data:{media};base64,{data}"})


def to_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": object_schema(t.parameters),
            "strict": False,
        }
        for t in tools
    ]


class ResponsesProvider(SdkProvider):
    default_url = DEFAULT_URL

    def _client_class(self) -> Any:
        from openai import AsyncOpenAI  # lazy: ~1 s of import

        return AsyncOpenAI

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str | None
    ) -> AsyncIterator[StreamItem]:
        client = self._get_client()
        kwargs: dict[str, Any] = {
            "model": self.model,
            "input": to_input(messages),
            "stream": True,
            "store": False,
        }
        if system:
            kwargs["instructions"] = system
        if tools:
            kwargs["tools"] = to_tools(tools)
        try:
            events = await client.responses.create(**kwargs)
        except Exception as e:
            raise self._fail(e) from e

        pending: dict[int, tuple[str, str, list[str]]] = {}  # output_index → call_id, name, args
        made_calls = False
        end: StreamEnd | None = None
        usage: Usage | None = None
        try:
            async for ev in events:
                kind = ev.type
                if kind == "response.output_text.delta":
                    if ev.delta:
                        yield TextDelta(ev.delta)
                elif kind == "response.output_item.added" and ev.item.type == "function_call":
                    pending[ev.output_index] = (ev.item.call_id, ev.item.name, [])
                elif kind == "response.function_call_arguments.delta":
                    if ev.output_index in pending:
                        pending[ev.output_index][2].append(ev.delta)
                elif kind == "response.output_item.done" and ev.item.type == "function_call":
                    call_id, name, parts = pending.pop(
                        ev.output_index, (ev.item.call_id, ev.item.name, [])
                    )
                    raw = ev.item.arguments if ev.item.arguments is not None else "".join(parts)
                    made_calls = True
                    yield ToolCall.from_raw(ev.item.call_id or call_id, ev.item.name or name, raw)
                elif kind in ("response.completed", "response.incomplete"):
                    for call_id, name, parts in pending.values():  # items never closed
                        made_calls = True
                        yield ToolCall.from_raw(call_id, name, "".join(parts))
                    pending.clear()
                    resp = ev.response
                    if resp.usage is not None:
                        usage = Usage(resp.usage.input_tokens, resp.usage.output_tokens)
                    end = StreamEnd(self._stop_reason(resp, made_calls))
                elif kind == "response.failed":
                    error = ev.response.error
                    detail = error.message if error is not None else "the response failed"
                    raise ProviderFailure(f"{self.config.name}: {detail}", retryable=True)
                elif kind == "error":
                    raise ProviderFailure(f"{self.config.name}: {ev.message}", retryable=True)
        except ProviderFailure:
            raise
        except Exception as e:
            raise self._fail(e, streaming=True) from e
        finally:
            await events.close()
        if end is None:
            raise ProviderFailure(
                f"{self.config.name}: the stream ended before the reply was complete",
                retryable=True,
            )
        if usage is not None:
            yield usage
        yield end

    @staticmethod
    def _stop_reason(resp: Any, made_calls: bool) -> str:
        if resp.status == "incomplete":
            reason = getattr(resp.incomplete_details, "reason", None) or "incomplete"
            return INCOMPLETE_REASONS.get(reason, reason)
        return "tool_use" if made_calls else "end_turn"
