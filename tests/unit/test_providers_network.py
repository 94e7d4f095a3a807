"""The three network providers driven through the REAL openai / anthropic SDKs against our
loopback fake server (tests/fakes/llm_server.py): streaming, tool calls, the tool-result round
trip as each API serialises it, usage, stop reasons and every error path."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer

from tuiapp.providers.anthropic import AnthropicProvider
from tuiapp.providers.base import Provider, ProviderFailure, StreamEnd, stream_with_retries
from tuiapp.providers.openai_chat import ChatProvider
from tuiapp.providers.openai_responses import ResponsesProvider
from tuiapp.settings.config_types import ProviderConfig
from tuiapp.vocab.events import Retrying, TextDelta, Usage
from tuiapp.vocab.messages import Message, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

KEY = "sk-test-SECRET-0123456789abcdef"
APIS = {
    "responses": (ResponsesProvider, "OPENAI_API_KEY"),
    "chat": (ChatProvider, "OPENROUTER_API_KEY"),
    "anthropic": (AnthropicProvider, "ANTHROPIC_API_KEY"),
}
READFILE = ToolSpec(
    "readfile",
    "Read a file",
    {"type": "object", "properties": {"filename": {"type": "string"}}, "required": ["filename"]},
    "keprompt",
    "/x/readfile",
)
NOARGS = ToolSpec("now", "The time", {}, "keprompt", "/x/now")

MakeProvider = Callable[..., Provider]


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as s:
        yield s


@pytest.fixture(params=list(APIS))
def api(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def make(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[MakeProvider]:
    made: list[Provider] = []

    def factory(api: str, *, key: str | None = KEY, base_url: str | None = None) -> Provider:
        cls, env = APIS[api]
        if key is not None:
            monkeypatch.setenv(env, key)
        # Anthropic's base URL has no /v1 (the SDK adds /v1/messages); OpenAI's has.
        url = base_url or (server.url if api == "anthropic" else server.base_url)
        config = ProviderConfig(f"p{api}", api, url, env, headers={"X-Kep-Test": "yes"})
        provider = cls(config, "test-model")
        made.append(provider)
        return provider

    yield factory
    for p in made:
        await p.aclose()


async def collect(
    provider: Provider,
    messages: list[Message] | None = None,
    tools: tuple[ToolSpec, ...] = (),
    system: str | None = None,
) -> list[Any]:
    history = messages if messages is not None else [Message("user", "hi")]
    return [item async for item in provider.stream(history, tools, system)]


async def collect_retrying(provider: Provider, sink: list[Any], **kw: Any) -> None:
    async for item in stream_with_retries(provider, [Message("user", "hi")], (), None, **kw):
        sink.append(item)


def text_of(items: list[Any]) -> str:
    return "".join(i.text for i in items if isinstance(i, TextDelta))


def calls_of(items: list[Any]) -> list[ToolCall]:
    return [i for i in items if isinstance(i, ToolCall)]


# ---- streaming ------------------------------------------------------------------------------


async def test_text_streams_in_pieces_with_usage_and_end_turn(
    api: str, make: MakeProvider, server: FakeLLMServer
) -> None:
    server.add({"text": "Hello brave new world", "usage": {"input_tokens": 12, "output_tokens": 4}})
    items = await collect(make(api), system="Be brief.")
    deltas = [i for i in items if isinstance(i, TextDelta)]
    assert len(deltas) == 4 and text_of(items) == "Hello brave new world"
    assert items[-2:] == [Usage(12, 4), StreamEnd("end_turn")]

    [req] = server.requests
    assert req.api == api and req.body["model"] == "test-model" and req.body["stream"] is True
    assert req.headers["x-kep-test"] == "yes"
    # (anthropic 2.x sends the key as a Bearer token, as openai does; older ones used x-api-key)
    assert KEY in req.headers.get("authorization", "") + req.headers.get("x-api-key", "")
    if api == "responses":  # the system prompt goes where each API wants it
        assert req.body["instructions"] == "Be brief."
        assert req.body["input"] == [{"role": "user", "content": "hi"}]
    elif api == "chat":
        assert req.body["messages"] == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hi"},
        ]
        assert req.body["stream_options"] == {"include_usage": True}
    else:
        assert req.body["system"] == "Be brief."
        assert req.body["messages"] == [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]}
        ]


async def test_parallel_tool_calls_with_fragmented_arguments(
    api: str, make: MakeProvider, server: FakeLLMServer
) -> None:
    server.add(
        {
            "text": "Reading both.",
            "interleave": True,  # chat: fragments of the two calls arrive interleaved
            "tool_calls": [
                {
                    "id": "c1",
                    "name": "readfile",
                    "arguments": {"filename": "a.txt"},
                    "fragment_size": 3,
                },
                {
                    "id": "c2",
                    "name": "readfile",
                    "arguments": {"filename": "b é.md"},
                    "fragment_size": 2,
                },
                {"id": "c3", "name": "now", "arguments": ""},
            ],
        }
    )
    items = await collect(make(api), tools=(READFILE, NOARGS))
    assert text_of(items) == "Reading both."
    assert [(c.id, c.name, c.arguments, c.arguments_error) for c in calls_of(items)] == [
        ("c1", "readfile", {"filename": "a.txt"}, None),
        ("c2", "readfile", {"filename": "b é.md"}, None),
        ("c3", "now", {}, None),
    ]
    assert items[-1] == StreamEnd("tool_use")

    tools = server.requests[0].body["tools"]
    if api == "responses":
        assert tools[0] == {
            "type": "function",
            "name": "readfile",
            "description": "Read a file",
            "parameters": READFILE.parameters,
            "strict": False,
        }
        assert tools[1]["parameters"] == {"type": "object", "properties": {}}
    elif api == "chat":
        assert tools[0] == {
            "type": "function",
            "function": {
                "name": "readfile",
                "description": "Read a file",
                "parameters": READFILE.parameters,
            },
        }
    else:
        assert tools[0] == {
            "name": "readfile",
            "description": "Read a file",
            "input_schema": READFILE.parameters,
        }
        assert tools[1]["input_schema"] == {"type": "object", "properties": {}}


async def test_malformed_arguments_become_an_arguments_error(
    api: str, make: MakeProvider, server: FakeLLMServer
) -> None:
    server.add({"tool_calls": [{"id": "c1", "name": "readfile", "arguments": '{"filename": "a'}]})
    [call] = calls_of(await collect(make(api), tools=(READFILE,)))
    assert call.arguments == {} and call.raw_arguments == '{"filename": "a'
    assert call.arguments_error and "not valid JSON" in call.arguments_error


async def test_max_tokens_stop_reason(api: str, make: MakeProvider, server: FakeLLMServer) -> None:
    server.add({"text": "cut by the limit", "stop": "max_tokens"})
    items = await collect(make(api))
    assert text_of(items) == "cut by the limit" and items[-1] == StreamEnd("max_tokens")


# ---- the tool-result round trip ------------------------------------------------------------


async def _round_trip(api: str, make: MakeProvider, server: FakeLLMServer, text: str) -> Any:
    """Model asks for two calls; we answer one ok and one failed; return the 2nd request body."""
    server.add(
        {
            "text": text,
            "tool_calls": [
                {"id": "c1", "name": "readfile", "arguments": {"filename": "a.txt"}},
                {"id": "c2", "name": "readfile", "arguments": {"filename": "nope"}},
            ],
        },
        {"text": "Done."},
    )
    provider = make(api)
    first = await collect(provider, tools=(READFILE,))
    calls = tuple(calls_of(first))
    history = [
        Message("user", "hi"),
        Message("assistant", text_of(first), tool_calls=calls),
        Message("tool", "alpha", tool_call_id="c1", name="readfile"),
        Message("tool", "exit 1: no such file", tool_call_id="c2", name="readfile", is_error=True),
    ]
    second = await collect(provider, history, tools=(READFILE,), system="sys")
    assert text_of(second) == "Done." and second[-1] == StreamEnd("end_turn")
    return server.requests[1].body


async def test_round_trip_responses(make: MakeProvider, server: FakeLLMServer) -> None:
    body = await _round_trip("responses", make, server, "Let me look.")
    assert body["input"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Let me look."},
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "readfile",
            "arguments": '{"filename": "a.txt"}',
        },
        {
            "type": "function_call",
            "call_id": "c2",
            "name": "readfile",
            "arguments": '{"filename": "nope"}',
        },
        {"type": "function_call_output", "call_id": "c1", "output": "alpha"},
        {"type": "function_call_output", "call_id": "c2", "output": "exit 1: no such file"},
    ]


async def test_round_trip_chat(make: MakeProvider, server: FakeLLMServer) -> None:
    body = await _round_trip("chat", make, server, "Let me look.")
    assert body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "readfile", "arguments": '{"filename": "a.txt"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "readfile", "arguments": '{"filename": "nope"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "alpha"},
        {"role": "tool", "tool_call_id": "c2", "content": "exit 1: no such file"},
    ]


async def test_round_trip_anthropic(make: MakeProvider, server: FakeLLMServer) -> None:
    body = await _round_trip("anthropic", make, server, "Let me look.")
    assert body["system"] == "sys"
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {
                    "type": "tool_use",
                    "id": "c1",
                    "name": "readfile",
                    "input": {"filename": "a.txt"},
                },
                {"type": "tool_use", "id": "c2", "name": "readfile", "input": {"filename": "nope"}},
            ],
        },
        # both results in ONE user message; the failed one flagged
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "alpha"},
                {
                    "type": "tool_result",
                    "tool_use_id": "c2",
                    "content": "exit 1: no such file",
                    "is_error": True,
                },
            ],
        },
    ]


async def test_assistant_with_only_tool_calls_serialises_validly(
    api: str, make: MakeProvider, server: FakeLLMServer
) -> None:
    body = await _round_trip(api, make, server, "")
    if api == "responses":
        assert [i.get("type", i.get("role")) for i in body["input"]] == [
            "user",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output",
        ]
    elif api == "chat":
        assistant = body["messages"][2]
        assert assistant["content"] is None and len(assistant["tool_calls"]) == 2
    else:  # no empty text block (Anthropic rejects them)
        assert [b["type"] for b in body["messages"][1]["content"]] == ["tool_use", "tool_use"]


async def test_history_clean_up(api: str, make: MakeProvider, server: FakeLLMServer) -> None:
    """An interrupted empty reply is skipped; a call that never got a result (cut mid-turn) is
    dropped, since every API rejects an unanswered call; partial text is kept."""
    server.add({"text": "ok"})
    history = [
        Message("user", "first"),
        Message("assistant", "", interrupted=True),
        Message("user", "second"),
        Message(
            "assistant",
            "partial answ",
            interrupted=True,
            tool_calls=(ToolCall("lost", "readfile", {"filename": "x"}),),
        ),
        Message("user", "third"),
    ]
    await collect(make(api), history)
    body = server.requests[0].body
    wire = json.dumps(body)
    assert "lost" not in wire and "partial answ" in wire
    if api == "responses":
        assert [i["role"] for i in body["input"]] == ["user", "user", "assistant", "user"]
    elif api == "chat":
        assert [m["role"] for m in body["messages"]] == ["user", "user", "assistant", "user"]
    else:  # consecutive user messages merged: roles alternate
        assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
        assert [b["text"] for b in body["messages"][0]["content"]] == ["first", "second"]


PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


async def test_images_are_sent_as_base64(
    api: str, make: MakeProvider, server: FakeLLMServer, tmp_path: Path
) -> None:
    image = tmp_path / "dot.png"
    image.write_bytes(PNG)
    server.add({"text": "a dot"})
    history = [Message("user", "what is this?", images=(str(image), str(tmp_path / "gone.png")))]
    await collect(make(api), history)
    body = server.requests[0].body
    data = base64.b64encode(PNG).decode()
    if api == "responses":
        parts = body["input"][0]["content"]
        assert {
            "type": "input_image",
            "detail": "auto",
            "image_url": f"data:image/png;base64,{data}",
        } in parts
    elif api == "chat":
        parts = body["messages"][0]["content"]
        assert {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}} in parts
    else:
        parts = body["messages"][0]["content"]
        assert parts[0] == {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": data},
        }
    wire = json.dumps(parts)
    assert "what is this?" in wire and "gone.png could not be attached" in wire


# ---- errors ---------------------------------------------------------------------------------


async def test_401_names_the_key_variable_and_never_shows_the_key(
    api: str, make: MakeProvider, server: FakeLLMServer
) -> None:
    server.add({"error": 401}, {"text": "never reached"})  # the fake echoes the key it got
    with pytest.raises(ProviderFailure) as info:
        await collect_retrying(make(api), [], base_delay=0.01)
    env = APIS[api][1]
    assert info.value.message.startswith(f"{env} was rejected (401)")
    assert KEY not in info.value.message and "SECRET" not in info.value.message
    assert info.value.status == 401 and not info.value.retryable
    assert len(server.requests) == 1  # not retried


async def test_missing_key_is_reported_before_any_request(
    api: str, make: MakeProvider, server: FakeLLMServer
) -> None:
    with pytest.raises(ProviderFailure, match=rf"{APIS[api][1]} is not set"):
        await collect(make(api, key=None))
    assert server.requests == []


async def test_local_chat_server_needs_no_key(server: FakeLLMServer) -> None:
    server.add({"text": "local"})
    provider = ChatProvider(ProviderConfig("llamacpp", "chat", server.base_url), "qwen")
    try:
        assert text_of(await collect(provider)) == "local"
    finally:
        await provider.aclose()
    assert server.requests[0].headers["authorization"].startswith("Bearer ")


async def test_429_then_success_honours_retry_after(
    api: str, make: MakeProvider, server: FakeLLMServer
) -> None:
    server.add({"error": 429, "message": "slow down", "retry_after": 0}, {"text": "fine now"})
    items: list[Any] = []
    await collect_retrying(make(api), items, base_delay=30)  # 30 s unless retry-after is used
    [retry] = [i for i in items if isinstance(i, Retrying)]
    assert (
        retry.attempt == 1 and retry.delay == 0 and "rate limited (429): " in retry.reason
        and retry.reason.endswith("slow down")
    )
    assert text_of(items) == "fine now" and items[-1] == StreamEnd("end_turn")
    assert len(server.requests) == 2


async def test_500_is_retryable(api: str, make: MakeProvider, server: FakeLLMServer) -> None:
    server.add({"error": 500, "message": "boom"}, {"error": 503}, {"text": "recovered"})
    provider = make(api)
    with pytest.raises(ProviderFailure) as info:
        await collect(provider)
    assert info.value.retryable and info.value.status == 500 and "boom" in info.value.message
    items: list[Any] = []
    await collect_retrying(provider, items, base_delay=0.01)
    assert text_of(items) == "recovered" and len(server.requests) == 3


async def test_connection_refused_is_retryable(api: str, make: MakeProvider) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}" + ("" if api == "anthropic" else "/v1")
    with pytest.raises(ProviderFailure) as info:
        await collect(make(api, base_url=url))
    assert info.value.retryable
    assert (
        f"cannot reach {url}" in info.value.message
        and "is the server running?" in info.value.message
    )


async def test_stream_cut_mid_way_keeps_partial_text_and_is_not_retried(
    api: str, make: MakeProvider, server: FakeLLMServer
) -> None:
    server.add({"text": "one two three four five", "cut_after": 2}, {"text": "duplicate!"})
    items: list[Any] = []
    with pytest.raises(ProviderFailure) as info:
        await collect_retrying(make(api), items, base_delay=0.01)
    assert text_of(items) == "one two "  # the partial reply reached the caller first
    assert "connection lost mid-reply" in info.value.message
    assert len(server.requests) == 1 and server.remaining == 1  # no silent duplicate


async def test_cut_inside_tool_arguments_yields_no_half_call(
    api: str, make: MakeProvider, server: FakeLLMServer
) -> None:
    server.add(
        {
            "tool_calls": [
                {"name": "readfile", "arguments": {"filename": "abcdefgh"}, "fragment_size": 4}
            ],
            "cut_after": 2,
        }
    )
    items: list[Any] = []
    with pytest.raises(ProviderFailure):
        items.extend(await collect(make(api), tools=(READFILE,)))
    assert calls_of(items) == []


async def test_error_event_inside_the_stream(
    api: str, make: MakeProvider, server: FakeLLMServer
) -> None:
    server.add({"text": "a b c", "stream_error": "Overloaded", "error_after": 1})
    provider = make(api)
    seen: list[Any] = []
    with pytest.raises(ProviderFailure, match="Overloaded"):
        async for item in provider.stream([Message("user", "hi")], (), None):
            seen.append(item)
    assert text_of(seen) == "a "


# ---- API-specific fallbacks -----------------------------------------------------------------


async def test_chat_drops_stream_options_when_the_server_rejects_them(
    make: MakeProvider, server: FakeLLMServer
) -> None:
    server.add(
        {"error": 400, "message": "Unrecognized request argument supplied: stream_options"},
        {"text": "ok"},
        {"text": "again"},
    )
    provider = make("chat")
    assert text_of(await collect(provider)) == "ok"
    assert text_of(await collect(provider)) == "again"
    assert [("stream_options" in r.body) for r in server.requests] == [True, False, False]


async def test_anthropic_lowers_max_tokens_to_the_model_limit(
    make: MakeProvider, server: FakeLLMServer
) -> None:
    server.add(
        {"error": 400, "message": "max_tokens: 8192 > 4096, which is the maximum allowed"},
        {"text": "ok"},
    )
    assert text_of(await collect(make("anthropic"))) == "ok"
    assert [r.body["max_tokens"] for r in server.requests] == [8192, 4096]


def test_provider_modules_do_not_import_the_sdks() -> None:
    code = (
        "import sys, tuiapp.providers.openai_chat, tuiapp.providers.openai_responses, "
        "tuiapp.providers.anthropic; print(sorted({'openai', 'anthropic', 'httpx2'} & "
        "set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_body_ending_without_the_terminal_event_is_a_failure(
    api: str, make: MakeProvider, server: FakeLLMServer
) -> None:
    server.add({"text": "one two three", "end_after": 2})
    seen: list[Any] = []
    with pytest.raises(ProviderFailure, match="ended before the reply was complete"):
        async for item in make(api).stream([Message("user", "hi")], (), None):
            seen.append(item)
    assert text_of(seen) == "one two "


async def test_cancel_mid_stream_closes_the_connection(
    api: str, make: MakeProvider, server: FakeLLMServer
) -> None:
    server.add({"text": "w " * 500, "delay": 0.01})
    provider = make(api)
    got_text = asyncio.Event()

    async def consume() -> None:
        async for item in provider.stream([Message("user", "hi")], (), None):
            if isinstance(item, TextDelta):
                got_text.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(got_text.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(200):  # the server notices within a few of its 10 ms writes
        if server.aborted:
            break
        await asyncio.sleep(0.01)
    assert server.aborted == 1
