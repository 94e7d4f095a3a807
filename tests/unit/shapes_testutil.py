"""Shared set-up for the provider shape tests: real SDKs against the loopback fake server,
driven through the real turn loop (Run). Each test module declares the two fixtures with
`serving()` and `providers()`:

    @pytest.fixture
    def server() -> Iterator[FakeLLMServer]:
        yield from serving()

    @pytest.fixture
    async def make(server, monkeypatch) -> AsyncIterator[Make]:
        async for factory in providers(server, monkeypatch):
            yield factory
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer

from tuiapp.conversation.conversation import Conversation, allow_all
from tuiapp.providers.anthropic import AnthropicProvider
from tuiapp.providers.base import Provider
from tuiapp.providers.openai_chat import ChatProvider
from tuiapp.providers.openai_responses import ResponsesProvider
from tuiapp.settings.config_types import ApprovalConfig, ProviderConfig
from tuiapp.vocab.events import Event, ReasoningDelta, TextDelta, ToolFinished
from tuiapp.vocab.messages import Message, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

KEY = "sk-test-SECRET-0123456789abcdef"
CLASSES = {"chat": ChatProvider, "responses": ResponsesProvider, "anthropic": AnthropicProvider}
READFILE = ToolSpec(
    "readfile", "Read a file",
    {"type": "object", "properties": {"filename": {"type": "string"}}, "required": ["filename"]},
    "keprompt", "/x/readfile")


def serving() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as s:
        yield s


Make = Callable[..., Provider]


async def providers(server: FakeLLMServer,
                    monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Make]:
    """A factory of real providers pointed at `server` (closed afterwards)."""
    made: list[Provider] = []
    monkeypatch.setenv("KEP_TEST_KEY", KEY)

    def factory(api: str, name: str = "p", model: str = "m", **config: Any) -> Provider:
        url = server.url if api == "anthropic" else server.base_url
        provider = CLASSES[api](ProviderConfig(name, api, url, "KEP_TEST_KEY", **config), model)
        made.append(provider)
        return provider

    yield factory
    for p in made:
        await p.aclose()


class Run:
    """A Conversation over a real provider; the one tool answers "hello" to any call."""

    def __init__(self, provider: Provider, history: list[Message] | None = None) -> None:
        self.events: list[Event] = []
        self.ran: list[ToolCall] = []
        self.conv = Conversation(provider, lambda: {"readfile": READFILE},
                                 lambda: ApprovalConfig("allow"), allow_all, self.execute,
                                 self.events.append, history=history or [])

    async def execute(self, spec: ToolSpec, call: ToolCall, emit: Any) -> ToolFinished:
        self.ran.append(call)
        fin = ToolFinished(call.id, call.name, "ok", 0, 1, "hello")
        emit(fin)
        return fin

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def text(self) -> str:
        return "".join(e.text for e in self.of(TextDelta))

    @property
    def thinking(self) -> str:
        return "".join(e.text for e in self.of(ReasoningDelta))


def bodies(server: FakeLLMServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests]
