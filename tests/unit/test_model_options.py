"""Per-session model options (temperature, max output tokens, reasoning effort): from config
per provider or model, sent as each API names them, and a model that refuses one keeps
working (learned once, one notice)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes import recorded
from fakes.llm_server import FakeLLMServer
from shapes_testutil import Make, Run, bodies, providers, serving

from tuiapp.providers.openai_chat import ChatProvider
from tuiapp.settings.config import parse
from tuiapp.settings.config_types import ConfigError, ModelOptions, ProviderConfig
from tuiapp.vocab.events import Notice, ProviderError


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    yield from serving()


@pytest.fixture
async def make(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Make]:
    async for factory in providers(server, monkeypatch):
        yield factory


def test_model_table_wins_over_the_provider() -> None:
    cfg = parse({"providers": {"local": {
        "api": "chat", "temperature": 0.3, "max_output_tokens": 2048, "reasoning": "low",
        "models": {"qwen3": {"temperature": 0.7, "reasoning": "high"}}}}}, "kep.toml", Path("."))
    pc = cfg.providers["local"]
    assert pc.options_for("qwen3") == ModelOptions(0.7, 2048, "high", None)
    assert pc.options_for("other") == ModelOptions(0.3, 2048, "low", None)
    p = ChatProvider(pc, "qwen3")
    assert (p.temperature, p.max_output_tokens, p.reasoning) == (0.7, 2048, "high")


def test_a_builtin_provider_keeps_its_settings_when_options_are_added() -> None:
    cfg = parse({"providers": {"openai": {"models": {"gpt-4.1": {"temperature": 0}}}}},
                "kep.toml", Path("."))
    pc = cfg.providers["openai"]
    assert pc.api == "responses" and pc.options_for("gpt-4.1").temperature == 0.0


@pytest.mark.parametrize(("table", "says"), [
    ({"temperature": 3}, "providers.p.temperature: must be between 0 and 2"),
    ({"temperature": "hot"}, "providers.p.temperature: expected a number"),
    ({"temperature": True}, "providers.p.temperature: expected a number, got a boolean"),
    ({"max_output_tokens": 0}, "providers.p.max_output_tokens: must be between 1"),
    ({"max_output_tokens": 1.5}, "providers.p.max_output_tokens: expected an integer"),
    ({"models": {"m": {"reasoning": "max"}}}, "providers.p.models.m.reasoning: must be one of"),
    ({"models": {"m\n\t": {"temperature": -1}}}, "providers.p.models.m\n\t.temperature"),
])
def test_bad_options_name_the_key(table: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse({"providers": {"p": {"api": "chat", **table}}}, "kep.toml", Path("."))
    assert says in str(e.value)


@pytest.mark.slow
async def test_each_api_names_them_its_way(make: Make, server: FakeLLMServer) -> None:
    server.add({"text": "a"}, {"text": "b"}, {"text": "c"}, {"text": "d"})
    for api in ("chat", "responses", "anthropic"):
        p = make(api, "p", "m")
        p.temperature, p.max_output_tokens = 0.2, 1234
        run = Run(p)
        assert await run.conv.turn("x") == "end_turn", (api, run.events)
    p = make("anthropic", "p", "m")
    p.max_output_tokens, p.reasoning = 1234, "high"
    last = Run(p)
    assert await last.conv.turn("x") == "end_turn", last.events
    assert len(bodies(server)) == 4, [r.path for r in server.requests]
    chat, responses, anthropic, thinking = bodies(server)
    assert (chat["temperature"], chat["max_tokens"]) == (0.2, 1234)
    assert (responses["temperature"], responses["max_output_tokens"]) == (0.2, 1234)
    # The Messages API (SDK 2) has no temperature: the longest reply still applies.
    assert anthropic["max_tokens"] == 1234 and "temperature" not in anthropic
    assert thinking["max_tokens"] > 1234  # room for the thinking budget


async def test_openai_itself_gets_max_completion_tokens(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    p = ChatProvider(ProviderConfig("openai-chat", "chat"), "gpt-4o")
    p.max_output_tokens = 99
    assert p._optional()["max_completion_tokens"] == 99 and "max_tokens" not in p._optional()


async def test_reasoning_model_refusing_temperature_keeps_working(
        make: Make, server: FakeLLMServer) -> None:
    server.add(recorded.openai_rejects("temperature"), {"text": "fine"}, {"text": "again"})
    p = make("responses", "openai", "o4-mini")
    p.temperature = 0.2
    run = Run(p)
    assert await run.conv.turn("x") == "end_turn", run.of(ProviderError)
    assert "temperature" in run.of(Notice)[0].text
    await run.conv.turn("y")
    assert "temperature" not in bodies(server)[1] and "temperature" not in bodies(server)[2]
    assert len(run.of(Notice)) == 1
