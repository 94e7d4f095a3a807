"""`reasoning` and `prices` settings: how each API is asked to think, the fallbacks when a
model refuses the parameter, and config errors for bad values."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer
from shapes_testutil import Make, Run, bodies, providers, serving


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    yield from serving()


@pytest.fixture
async def make(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Make]:
    async for factory in providers(server, monkeypatch):
        yield factory


@pytest.mark.parametrize(("level", "expected"), [
    ("high", {"effort": "high", "summary": "auto"}), ("off", {"effort": "minimal"}),
    (None, {"summary": "auto"})])
async def test_responses_reasoning_levels(level: str | None, expected: dict[str, Any],
                                          make: Make, server: FakeLLMServer) -> None:
    server.add({"text": "ok"})
    run = Run(make("responses", reasoning=level))
    await run.conv.turn("hi")
    assert server.requests[0].body["reasoning"] == expected


async def test_responses_model_without_reasoning_drops_the_parameter(
        make: Make, server: FakeLLMServer) -> None:
    server.add({"error": 400, "message": "Unsupported parameter: 'reasoning.effort' is not "
                                         "supported with this model."}, {"text": "ok"},
               {"text": "again"})
    run = Run(make("responses", reasoning="low"))
    assert await run.conv.turn("hi") == "end_turn"
    await run.conv.turn("more")
    assert "reasoning" not in server.requests[1].body
    assert "reasoning" not in server.requests[2].body  # remembered


async def test_chat_reasoning_effort_and_anthropic_off(make: Make,
                                                      server: FakeLLMServer) -> None:
    server.add({"text": "a"}, {"text": "b"}, {"text": "c"})
    await Run(make("chat", reasoning="high")).conv.turn("hi")
    await Run(make("chat", reasoning="off")).conv.turn("hi")
    await Run(make("anthropic", reasoning="off")).conv.turn("hi")
    high, off, anthropic_off = bodies(server)
    assert high["reasoning_effort"] == "high" and "reasoning_effort" not in off
    assert anthropic_off["thinking"] == {"type": "disabled"}


def test_reasoning_and_prices_are_read() -> None:
    from pathlib import Path

    from tuiapp.settings.config import parse

    cfg = parse({"providers": {"ds": {"api": "chat", "reasoning": "high",
                                      "prices": {"input": 1, "output": 2.5},
                                      "models": {"big/one": {"prices": {"input": 3,
                                                                        "output": 4}}}}}},
                "kep.toml", Path("."))
    pc = cfg.providers["ds"]
    assert pc.reasoning == "high"
    assert pc.prices_for("other") == {"input": 1.0, "output": 2.5}
    assert pc.prices_for("big/one") == {"input": 3.0, "output": 4.0}



@pytest.mark.parametrize(("table", "says"), [
    ({"reasoning": "max"}, "providers.ds.reasoning: must be one of off, low, medium, high"),
    ({"reasoning": "high\n"}, "providers.ds.reasoning: must be one of"),
    ({"reasoning": True}, "providers.ds.reasoning: expected a string"),
    ({"prices": "cheap"}, "providers.ds.prices: expected a table"),
    ({"prices": {"input": 1}}, "providers.ds.prices.output: required"),
    ({"prices": {"input": -1, "output": 1}}, "providers.ds.prices.input: a price cannot be"),
    ({"prices": {"input": "1", "output": 1}}, "providers.ds.prices.input: expected a number"),
    ({"prices": {"input": 1, "output": 1, "inptu": 2}}, "providers.ds.prices.inptu: unknown"),
    ({"models": {"m": {"prices": {"output": 1}}}}, "providers.ds.models.m.prices.input"),
])
def test_bad_reasoning_or_prices_name_the_key(table: dict[str, Any], says: str) -> None:
    from pathlib import Path

    from tuiapp.settings.config import parse
    from tuiapp.settings.config_types import ConfigError

    with pytest.raises(ConfigError) as e:
        parse({"providers": {"ds": {"api": "chat", **table}}}, "kep.toml", Path("."))
    assert says in str(e.value)


async def test_anthropic_thinking_fits_a_model_with_a_low_limit(make: Make,
                                                                server: FakeLLMServer) -> None:
    server.add({"error": 400, "message": "max_tokens: 32768 > 8192, which is the maximum "
                                         "allowed number of output tokens"},
               {"text": "ok"}, {"text": "again"})
    run = Run(make("anthropic", model="claude-haiku-4-5", reasoning="high"))
    assert await run.conv.turn("hi") == "end_turn"
    await run.conv.turn("more")
    sent = [(b["max_tokens"], b["thinking"]["budget_tokens"]) for b in bodies(server)]
    assert sent == [(32768, 24576), (8192, 7168), (8192, 7168)]


async def test_responses_off_falls_back_to_none_where_minimal_is_refused(
        make: Make, server: FakeLLMServer) -> None:
    server.add({"error": 400, "message": "Unsupported value: 'minimal' is not supported with "
                                         "the 'gpt-5.1' model for 'reasoning.effort'."},
               {"text": "ok"})
    run = Run(make("responses", reasoning="off"))
    assert await run.conv.turn("hi") == "end_turn"
    assert [b.get("reasoning") for b in bodies(server)] == [{"effort": "minimal"},
                                                            {"effort": "none"}]


async def test_responses_off_is_none_on_gpt6_models(make: Make,
                                                    server: FakeLLMServer) -> None:
    server.add({"text": "ok"})
    await Run(make("responses", model="gpt-6.1-terra", reasoning="off")).conv.turn("hi")
    assert [b.get("reasoning") for b in bodies(server)] == [{"effort": "none"}]


async def test_anthropic_newer_models_think_adaptively(make: Make,
                                                      server: FakeLLMServer) -> None:
    server.add({"text": "a"},
               {"error": 400, "message": "thinking.type.enabled is not supported for this "
                                         "model. Use thinking.type.adaptive instead."},
               {"text": "b"}, {"text": "c"})
    await Run(make("anthropic", model="claude-opus-4-7", reasoning="low")).conv.turn("hi")
    run = Run(make("anthropic", model="claude-opus-4-1", reasoning="high"))
    await run.conv.turn("hi")
    await run.conv.turn("again")
    new, refused, flipped, remembered = bodies(server)
    assert new["thinking"] == {"type": "adaptive"} and new["output_config"] == {"effort": "low"}
    assert refused["thinking"]["type"] == "enabled"
    assert flipped["thinking"] == {"type": "adaptive"} == remembered["thinking"]
    assert flipped["output_config"] == {"effort": "high"}


async def test_anthropic_off_uses_between_tools_where_disabled_is_refused(
        make: Make, server: FakeLLMServer) -> None:
    """Sonnet 5.5 refuses `thinking: disabled`; its lowest setting is `between_tools`. A model
    kep doesn't know yet is switched after its 400 and keeps the switch."""
    server.add({"text": "a"},
               {"error": 400, "message": "thinking.type.disabled is not supported for this "
                                         "model. Use thinking.type.between_tools instead."},
               {"text": "b"}, {"text": "c"})
    await Run(make("anthropic", model="claude-sonnet-5-5", reasoning="off")).conv.turn("hi")
    run = Run(make("anthropic", model="claude-next-6", reasoning="off"))
    assert await run.conv.turn("hi") == "end_turn"
    await run.conv.turn("again")
    known, refused, switched, remembered = bodies(server)
    assert known["thinking"] == {"type": "between_tools"}
    assert refused["thinking"] == {"type": "disabled"}
    assert switched["thinking"] == {"type": "between_tools"} == remembered["thinking"]
