"""How full the context is: the provider's own input tokens of the last request against a
window configured for the provider or model, or known for common models."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer
from shapes_testutil import Make, Run, providers, serving

from tuiapp.providers.context_windows import context_window, known_window
from tuiapp.settings.config import parse
from tuiapp.settings.config_types import ConfigError, ProviderConfig
from tuiapp.vocab.events import ContextUsed


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    yield from serving()


@pytest.fixture
async def make(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Make]:
    async for factory in providers(server, monkeypatch):
        yield factory


@pytest.mark.parametrize(("model", "window"), [
    ("gpt-4o-mini", 128_000), ("gpt-4.1-nano", 1_047_576), ("gpt-5-mini", 400_000),
    ("gpt-5-chat-latest", 128_000), ("o4-mini", 200_000), ("claude-sonnet-4-5", 200_000),
    ("anthropic/claude-3.7-sonnet", 200_000), ("gemini-3-flash-preview", 1_048_576),
    ("deepseek-reasoner", 128_000), ("qwen3:8b", 32_768), ("llama3.1:70b", 131_072),
    ("openai.gpt-5.5", 400_000), ("openai/gpt-oss-120b:cerebras", 131_072),
    ("my-finetune", None), ("", None), ("\t\n", None), ("x" * 100_000, None),
])
def test_known_windows(model: str, window: int | None) -> None:
    assert known_window(model) == window


def test_configured_window_wins_per_model_then_provider() -> None:
    cfg = parse({"providers": {"local": {
        "api": "chat", "context_window": 16384,
        "models": {"qwen3:8b": {"context_window": 40960}}}}}, "kep.toml", Path("."))
    pc = cfg.providers["local"]
    assert context_window(pc, "qwen3:8b") == 40960
    assert context_window(pc, "gpt-4o") == 16384  # the provider's own beats the table
    assert context_window(ProviderConfig("x", "chat"), "gpt-4o") == 128_000


@pytest.mark.parametrize(("table", "says"), [
    ({"context_window": 0}, "providers.p.context_window: must be between 1"),
    ({"context_window": "128k"}, "providers.p.context_window: expected an integer"),
    ({"context_window": 1e12}, "providers.p.context_window: expected an integer"),
    ({"models": {"m": {"context_window": -5}}}, "providers.p.models.m.context_window"),
])
def test_bad_window_names_the_key(table: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse({"providers": {"p": {"api": "chat", **table}}}, "kep.toml", Path("."))
    assert says in str(e.value)


def test_misspelt_key_in_a_model_table_warns() -> None:
    cfg = parse({"providers": {"p": {"api": "chat", "models": {"m": {
        "context_windw": 5, "prices": {"input": 1, "output": 1}}}}}}, "kep.toml", Path("."))
    assert any("context_windw" in w and "context_window" in w for w in cfg.warnings)
    assert not any("prices" in w for w in cfg.warnings)


@pytest.mark.slow
@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
async def test_each_request_reports_its_input_tokens_against_the_window(
        api: str, make: Make, server: FakeLLMServer) -> None:
    usage = {"input_tokens": 96_000, "output_tokens": 10}
    server.add({"text": "one", "usage": usage}, {"text": "two", "usage": {
        "input_tokens": 100_000, "output_tokens": 5}})
    run = Run(make(api, "p", "gpt-4o"))
    await run.conv.turn("a")
    await run.conv.turn("b")
    used = run.of(ContextUsed)
    assert [(c.tokens, c.window) for c in used] == [(96_000, 128_000), (100_000, 128_000)]
    assert run.conv.context == used[-1] and used[-1].fraction == 100_000 / 128_000
