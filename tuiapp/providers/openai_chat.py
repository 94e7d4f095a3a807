"""OpenAI Chat Completions, streamed: OpenRouter, Ollama, LM Studio, vLLM, llama.cpp and any
`[providers.X] api = "chat"` server.

Servers differ in small ways, handled here: some reject `stream_options` or `reasoning_effort`
(each dropped once on a 400 that names it), some omit tool call ids or finish with "stop" after
tool calls, some never send a finish_reason at all. A stream is complete when it ends with
`data: [DONE]` or, since Cerebras, Perplexity and Hugging Face's router never send it, once a
finish_reason came; a body that stops before either was cut. Content and reasoning shapes:
chat_shapes; inline <think> tags: think_tags. Gemini puts a thought signature on each tool
call (`extra_content`), which goes back on that call.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from tuiapp.providers import optional_fields
from tuiapp.providers.base import ProviderFailure, StreamEnd, StreamItem
from tuiapp.providers.chat_shapes import (
    ReasoningFields,
    call_extras,
    field_of,
    message_fields,
    split_content,
)
from tuiapp.providers.think_tags import ThinkSplitter
from tuiapp.providers.wire import (
    SdkProvider,
    call_arguments_json,
    clean_history,
    images_to_send,
    object_schema,
    text_only_result,
    text_then_images,
    unique_id,
)
from tuiapp.vocab.events import Notice, ReasoningDelta, TextDelta, Usage
from tuiapp.vocab.messages import Message, Reasoning, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

DEFAULT_URL = "https://api.openai.com/v1"
# Chat Completions tool messages take text only. The image could be re-sent in a user message
# after the results, but that puts words in the user's mouth, breaks the tool-result run some
# servers require, and local servers mostly have no vision: the placeholder is the honest answer.
NO_TOOL_IMAGES = "this provider takes no images in tool results"
FINISH = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}


def to_messages(messages: Sequence[Message], system: str | None,
                origin: str = "") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    history = clean_history(messages)
    keep = images_to_send(history)
    for m in history:
        if m.role in ("user", "system"):
            out.append(
                {"role": m.role,
                 "content": _user_content(m, keep) if m.role == "user" else m.content}
            )
        elif m.role == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": m.content or None}
            own = m.reasoning is not None and m.reasoning.origin == origin
            extras = call_extras(m.reasoning.items) if own and m.reasoning else {}
            if m.tool_calls:
                msg["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": call_arguments_json(c.arguments)},
                        **({"extra_content": extras[c.id]} if c.id in extras else {}),
                    }
                    for c in m.tool_calls
                ]
            # Only next to tool calls, where a thinking server needs it to go on (DeepSeek's
            # tool loop, OpenRouter's reasoning_details); earlier answers' reasoning is
            # ignored or, by some servers, refused.
            if m.tool_calls and own and m.reasoning is not None:
                msg.update(message_fields(m.reasoning.items))
            out.append(msg)
        elif m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id,
                        "content": text_only_result(m, NO_TOOL_IMAGES)})
    return out


def _user_content(m: Message, keep: set[object]) -> str | list[dict[str, Any]]:
    return text_then_images(
        m, lambda text: {"type": "text", "text": text},
        lambda media, data: {"type": "image_url",
                             "image_url": {"url": f"data:{media};base64,{data}"}}, keep)


def to_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": object_schema(t.parameters),
            },
        }
        for t in tools
    ]


def done_watcher(stream: Any) -> Callable[[], bool]:
    """Whether the stream's `data: [DONE]` arrived. The SDK ends iteration at [DONE] and at a
    body that just stops alike, so we look at its server-sent events as they pass (the SDK
    reads them lazily, through this method, once iteration starts)."""
    seen = [False]
    events = getattr(stream, "_iter_events", None)
    if events is None:  # another SDK shape: trust the stream's end
        return lambda: True

    async def watched() -> AsyncIterator[Any]:
        async for sse in events():
            if sse.data.startswith("[DONE]"):
                seen[0] = True
            yield sse

    stream._iter_events = watched
    return lambda: seen[0]


def chat_usage(u: Any) -> Usage:
    prompt = getattr(u, "prompt_tokens_details", None)
    completion = getattr(u, "completion_tokens_details", None)
    cached = getattr(prompt, "cached_tokens", None) or getattr(u, "prompt_cache_hit_tokens", None)
    return Usage(u.prompt_tokens or 0, u.completion_tokens or 0, int(cached or 0),
                 int(getattr(completion, "reasoning_tokens", None) or 0))


class ChatProvider(SdkProvider):
    default_url = DEFAULT_URL

    def _client_class(self) -> Any:
        from openai import AsyncOpenAI  # lazy: ~1 s of import

        return AsyncOpenAI

    def _optional(self) -> dict[str, Any]:
        refused = optional_fields.refused(self.config.name, self.model)
        extra: dict[str, Any] = {}
        if "stream_options" not in refused:
            extra["stream_options"] = {"include_usage": True}
        if "reasoning_effort" not in refused and self.reasoning in ("low", "medium", "high"):
            extra["reasoning_effort"] = self.reasoning
        if self.temperature is not None and "temperature" not in refused:
            extra["temperature"] = self.temperature
        # OpenAI itself wants max_completion_tokens (its reasoning models refuse max_tokens);
        # compatible servers know max_tokens.
        cap = "max_completion_tokens" if self._url == DEFAULT_URL else "max_tokens"
        if self.max_output_tokens is not None and cap not in refused:
            extra[cap] = self.max_output_tokens
        return extra

    async def _open(self, kwargs: dict[str, Any]) -> tuple[Any, str | None]:
        """The stream, and the notice of what was learned opening it (once per model)."""
        client = self._get_client()
        try:
            for _ in range(5):  # at most one retry per optional parameter
                extra = self._optional()
                try:
                    stream = await client.chat.completions.create(**kwargs, **extra)
                except Exception as e:
                    field = optional_fields.rejected(e, {k: (k,) for k in extra})
                    if field is None:
                        raise
                    optional_fields.learn(self.config.name, self.model, field)
                    continue
                return stream, optional_fields.notice(self.config.name, self.model)
            return await client.chat.completions.create(**kwargs), None
        except Exception as e:
            raise self._fail(e) from e

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str | None
    ) -> AsyncIterator[StreamItem]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": to_messages(messages, system, self.origin),
            "stream": True,
        }
        if tools:
            kwargs["tools"] = to_tools(tools)
        chunks, notice = await self._open(kwargs)
        if notice:
            yield Notice(notice, "warning")
        got_done = done_watcher(chunks)

        calls: dict[int, list[Any]] = {}  # index → [id, name, [argument fragments], extra]
        finish: str | None = None
        usage: Usage | None = None
        reasoning = ReasoningFields()
        think = ThinkSplitter()
        shown: list[str] = []
        try:
            async for chunk in chunks:
                if chunk.usage is not None:
                    usage = chat_usage(chunk.usage)
                for choice in (chunk.choices or [])[:1]:
                    delta = choice.delta
                    if delta is not None:
                        text, thought = split_content(delta.content)
                        thought = reasoning.add(delta) or thought
                        if text and not thought:
                            text, thought = think.feed(text)
                        if thought:
                            shown.append(thought)
                            yield ReasoningDelta(thought)
                        if text:
                            yield TextDelta(text)
                    for tc in (delta.tool_calls if delta is not None else None) or ():
                        self._add_fragment(calls, tc)
                    if choice.finish_reason:
                        finish = choice.finish_reason
        except Exception as e:
            raise self._fail(e, streaming=True) from e
        finally:
            await chunks.close()
        if not got_done() and finish is None:
            raise ProviderFailure(
                f"{self.config.name}: the stream ended before the reply was complete",
                retryable=True,
            )
        text, thought = think.end()
        if thought:
            shown.append(thought)
            yield ReasoningDelta(thought)
        if text:
            yield TextDelta(text)
        taken = {c.id for m in messages for c in m.tool_calls}
        extras: list[dict[str, Any]] = []
        for index in sorted(calls):
            call_id, name, parts, extra = calls[index]
            # A server that sent no id gets one of ours: unique, so kep's records keep calls
            # apart, and 9 letters/digits, the one shape every server accepts back (Mistral).
            call_id = unique_id(call_id or secrets.token_hex(5)[:9], taken)
            if extra is not None:
                extras.append({"field": "extra_content", "id": call_id, "value": extra})
            yield ToolCall.from_raw(call_id, name, "".join(parts))
        items = reasoning.items() + tuple(extras)
        if shown or items:
            yield Reasoning(self.origin, "".join(shown), items)
        if usage is not None:
            yield usage
        stop = FINISH.get(finish or "stop", finish or "stop")
        yield StreamEnd("tool_use" if calls and stop == "end_turn" else stop)

    @staticmethod
    def _add_fragment(calls: dict[int, list[Any]], tc: Any) -> None:
        index = tc.index if tc.index is not None else len(calls)
        entry = calls.get(index)
        # Some servers reuse index 0 for every parallel call: a new id starts a new call.
        if entry is not None and tc.id and entry[0] and tc.id != entry[0]:
            index = max(calls) + 1
            entry = None
        if entry is None:
            entry = calls[index] = [tc.id or "", "", [], None]
        elif tc.id and not entry[0]:
            entry[0] = tc.id
        extra = field_of(tc, "extra_content")
        if isinstance(extra, dict):
            entry[3] = extra  # Gemini's thought signature: sent back on this call, verbatim
        fn = tc.function
        if fn is not None:
            if fn.name and not entry[1]:
                entry[1] = fn.name
            if fn.arguments:
                entry[2].append(fn.arguments)
