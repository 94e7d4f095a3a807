"""OpenAI Responses API (the `openai/…` models), streamed through the official SDK.

kep keeps the whole history itself, so every request is stateless (`store=False`) and carries
the conversation as input items: messages, `function_call` and `function_call_output`. Reasoning
models need their reasoning back at every tool step: stateless, that means the reasoning items
with their encrypted content (asked for through `include`), replayed in the reply's order, with
each assistant message's `phase`. They are kept in the message's Reasoning and sent back only
to the model they came from.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from tuiapp.providers import optional_fields
from tuiapp.providers.base import ProviderFailure, StreamEnd, StreamItem
from tuiapp.providers.wire import (
    SdkProvider,
    call_arguments_json,
    clean_history,
    images_to_send,
    object_schema,
    result_with_images,
    text_then_images,
    unique_id,
)
from tuiapp.vocab.events import Notice, ReasoningDelta, TextDelta, Usage
from tuiapp.vocab.messages import Message, Reasoning, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

DEFAULT_URL = "https://api.openai.com/v1"
INCOMPLETE_REASONS = {"max_output_tokens": "max_tokens", "content_filter": "content_filter"}
INCLUDE = ["reasoning.encrypted_content"]
# Optional fields a model may refuse (gpt-4o and gpt-4.1 refuse all three) → the words that
# name each in an error; and how the notice names them.
OPTIONAL = {"include": ("include", "ncrypted content", "encrypted_content"),
            "reasoning.summary": ("reasoning.summary",),
            "reasoning": ("'reasoning", "reasoning.effort"),
            "temperature": ("temperature",), "max_output_tokens": ("max_output_tokens",)}
FIELD_NAMES = {"include": "include reasoning.encrypted_content"}
# Reasoning item fields sent back (status is output-only).
REASONING_KEYS = ("type", "id", "summary", "content", "encrypted_content")


def _call_item(c: ToolCall) -> dict[str, Any]:
    return {"type": "function_call", "call_id": c.id, "name": c.name,
            "arguments": call_arguments_json(c.arguments)}


def _replay(m: Message) -> list[dict[str, Any]]:
    """A reply of this same model, item by item as it came: reasoning, messages with their
    phase, calls (those still answered after clean-up)."""
    assert m.reasoning is not None
    calls = {c.id: c for c in m.tool_calls}
    out: list[dict[str, Any]] = []
    for item in m.reasoning.items:
        kind = item.get("type")
        if kind == "reasoning" and (item.get("encrypted_content") or item.get("content")):
            # (with neither encrypted nor plain content (DeepSeek's `reasoning_text`), a
            # stateless request could only name the item by id, which the API cannot find)
            out.append({k: item[k] for k in REASONING_KEYS if item.get(k) is not None})
        elif kind == "message" and item.get("text"):
            msg = {"role": "assistant", "content": item["text"]}
            if item.get("phase"):
                msg["phase"] = item["phase"]
            out.append(msg)
        elif kind == "function_call" and (call := calls.pop(item.get("call_id"), None)):
            out.append(_call_item(call))
    return out + [_call_item(c) for c in calls.values()]


def to_input(messages: Sequence[Message], origin: str = "") -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    history = clean_history(messages)
    keep = images_to_send(history)
    for m in history:
        if m.role == "user":
            items.append({"role": "user", "content": _user_content(m, keep)})
        elif m.role == "system":
            items.append({"role": "system", "content": m.content})
        elif m.role == "assistant":
            if m.reasoning is not None and m.reasoning.origin == origin:
                items += _replay(m)
                continue
            if m.content:
                items.append({"role": "assistant", "content": m.content})
            items += [_call_item(c) for c in m.tool_calls]
        elif m.role == "tool":
            items.append(
                {"type": "function_call_output", "call_id": m.tool_call_id,
                 "output": _output(m, keep)}
            )
    return items


def _output(m: Message, keep: set[object]) -> str | list[dict[str, Any]]:
    """A tool result: its text, or with images a list of `input_text` then `input_image`."""
    text, images = result_with_images(m, keep)
    if not images:
        return text
    return [{"type": "input_text", "text": text or "(no output)"}, *(
        {"type": "input_image", "detail": "auto",
         "image_url": f"data:{i.media_type};base64,{i.data}"} for i in images)]


def _user_content(m: Message, keep: set[object]) -> str | list[dict[str, Any]]:
    return text_then_images(
        m, lambda text: {"type": "input_text", "text": text},
        lambda media, data: {"type": "input_image", "detail": "auto",
                             "image_url": f"data:{media};base64,{data}"}, keep)


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


def _effort(level: str | None, least: str = "minimal") -> dict[str, Any]:
    """`reasoning` for a level: "off" asks for the least the model allows (`minimal` for
    gpt-5, `none` for the models after it)."""
    if level is None:
        return {"summary": "auto"}
    if level == "off":
        return {"effort": least}
    return {"effort": level, "summary": "auto"}


def responses_usage(u: Any) -> Usage:
    cached = getattr(getattr(u, "input_tokens_details", None), "cached_tokens", None)
    thought = getattr(getattr(u, "output_tokens_details", None), "reasoning_tokens", None)
    return Usage(u.input_tokens or 0, u.output_tokens or 0, int(cached or 0), int(thought or 0))


def _message_text(item: Any) -> str:
    return "".join(getattr(part, "text", None) or getattr(part, "refusal", None) or ""
                   for part in (getattr(item, "content", None) or ()))


class ResponsesProvider(SdkProvider):
    default_url = DEFAULT_URL

    def __init__(self, config: Any, model: str) -> None:
        super().__init__(config, model)
        # "off": `none` on gpt-6 models, else `minimal`, which becomes `none` after a 400
        self._least = "none" if model.startswith("gpt-6") else "minimal"
        self._notice: str | None = None  # what was learned while opening, said once

    def _optional(self) -> dict[str, Any]:
        """The optional fields of a request, less those this model refused."""
        refused = optional_fields.refused(self.config.name, self.model)
        out: dict[str, Any] = {}
        if "include" not in refused:
            out["include"] = INCLUDE  # stateless: reasoning comes back encrypted
        if "reasoning" not in refused:
            param = _effort(self.reasoning, self._least)
            if "reasoning.summary" in refused:
                param.pop("summary", None)
            if param:
                out["reasoning"] = param
        # The session's options (palette, config); a model that refuses one (reasoning
        # models and temperature) is asked again without it, with the notice.
        if self.temperature is not None and "temperature" not in refused:
            out["temperature"] = self.temperature
        if self.max_output_tokens is not None and "max_output_tokens" not in refused:
            out["max_output_tokens"] = self.max_output_tokens
        return out

    async def _open(self, kwargs: dict[str, Any]) -> Any:
        client = self._get_client()
        name = self.config.name
        try:
            for _ in range(len(OPTIONAL) + 2):  # each optional field is dropped at most once
                extra = self._optional()
                try:
                    events = await client.responses.create(**kwargs, **extra)
                except Exception as e:
                    if "'minimal'" in str(e) and self._least == "minimal" and "reasoning" in extra:
                        self._least = "none"
                        continue
                    sent = {k: v for k, v in OPTIONAL.items()
                            if k.partition(".")[0] in extra
                            and (k != "reasoning.summary" or "summary" in extra["reasoning"])}
                    field = optional_fields.rejected(e, sent)
                    if field is None:
                        raise
                    optional_fields.learn(name, self.model, field)
                    continue
                self._notice = optional_fields.notice(name, self.model, FIELD_NAMES)
                return events
            return await client.responses.create(**kwargs)
        except Exception as e:
            raise self._fail(e) from e

    def _client_class(self) -> Any:
        from openai import AsyncOpenAI  # lazy: ~1 s of import

        return AsyncOpenAI

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str | None
    ) -> AsyncIterator[StreamItem]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "input": to_input(messages, self.origin),
            "stream": True,
            "store": False,
        }
        if system:
            kwargs["instructions"] = system
        if tools:
            kwargs["tools"] = to_tools(tools)
        events = await self._open(kwargs)
        if self._notice:
            yield Notice(self._notice, "warning")
            self._notice = None
        # Ids already in the conversation: a server that restarts at `call_0` in every
        # response (Bedrock) gets its later calls renamed, here and in what goes back.
        taken = {c.id for m in messages for c in m.tool_calls}

        pending: dict[int, tuple[str, str, list[str]]] = {}  # output_index → call_id, name, args
        made_calls = refused = False
        end: StreamEnd | None = None
        usage: Usage | None = None
        kept: list[dict[str, Any]] = []  # the reply's items, in order, for the next request
        shown: list[str] = []  # reasoning text shown
        text_items: set[int] = set()  # output indexes of messages whose text was shown
        try:
            async for ev in events:
                kind = ev.type
                if kind in ("response.output_text.delta", "response.refusal.delta"):
                    if ev.delta:
                        if ev.output_index not in text_items and text_items:
                            yield TextDelta("\n\n")  # another message: its own paragraph
                        text_items.add(ev.output_index)
                        refused |= kind == "response.refusal.delta"
                        yield TextDelta(ev.delta)
                elif kind in ("response.reasoning_summary_text.delta",
                              "response.reasoning_text.delta"):
                    if ev.delta:
                        shown.append(ev.delta)
                        yield ReasoningDelta(ev.delta)
                elif kind == "response.reasoning_summary_part.added" and shown:
                    shown.append("\n\n")
                    yield ReasoningDelta("\n\n")
                elif kind == "response.output_item.done" and ev.item.type == "reasoning":
                    kept.append(ev.item.model_dump(mode="json", exclude_none=True))
                elif kind == "response.output_item.done" and ev.item.type == "message":
                    kept.append({"type": "message", "phase": getattr(ev.item, "phase", None),
                                 "text": _message_text(ev.item)})
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
                    call_id = unique_id(ev.item.call_id or call_id, taken)
                    kept.append({"type": "function_call", "call_id": call_id})
                    yield ToolCall.from_raw(call_id, ev.item.name or name, raw)
                elif kind in ("response.completed", "response.incomplete"):
                    for call_id, name, parts in pending.values():  # items never closed
                        made_calls = True
                        yield ToolCall.from_raw(unique_id(call_id, taken), name, "".join(parts))
                    pending.clear()
                    resp = ev.response
                    if resp.usage is not None:
                        usage = responses_usage(resp.usage)
                    stop = self._stop_reason(resp, made_calls)
                    end = StreamEnd("refusal" if refused and stop == "end_turn" else stop)
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
        if shown or any(i["type"] == "reasoning" or i.get("phase") for i in kept):
            yield Reasoning(self.origin, "".join(shown), tuple(kept))
        if usage is not None:
            yield usage
        yield end

    @staticmethod
    def _stop_reason(resp: Any, made_calls: bool) -> str:
        if resp.status == "incomplete":
            reason = getattr(resp.incomplete_details, "reason", None)
            return INCOMPLETE_REASONS.get(reason or "", "incomplete")
        return "tool_use" if made_calls else "end_turn"
