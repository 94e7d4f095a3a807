"""Model lists from each server's `/models`, in every shape the supported servers answer
(bodies as they send them, shortened), cached per provider; an unreachable server or a bad
answer is one line; a hostile list cannot flood or fool the picker."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer

from tuiapp.providers import model_lists
from tuiapp.providers.model_lists import list_models, parse_models
from tuiapp.settings.config_types import ProviderConfig

KEY = "sk-test-LISTING-0123456789abcdef"

SHAPES: dict[str, tuple[dict[str, Any], list[str]]] = {
    "openai": ({"object": "list", "data": [
        {"id": "gpt-4o-mini", "object": "model", "created": 1721172741, "owned_by": "system"},
        {"id": "gpt-5", "object": "model", "created": 1754425777, "owned_by": "system"}]},
        ["gpt-4o-mini", "gpt-5"]),
    "anthropic": ({"data": [
        {"type": "model", "id": "claude-sonnet-4-5", "display_name": "Claude Sonnet 4.5",
         "created_at": "2025-09-29T00:00:00Z"},
        {"type": "model", "id": "claude-haiku-4-5", "display_name": "Claude Haiku 4.5",
         "created_at": "2025-10-15T00:00:00Z"}],
        "has_more": False, "first_id": "claude-sonnet-4-5", "last_id": "claude-haiku-4-5"},
        ["claude-sonnet-4-5", "claude-haiku-4-5"]),
    "openrouter": ({"data": [
        {"id": "moonshotai/kimi-k2", "canonical_slug": "moonshotai/kimi-k2",
         "name": "MoonshotAI: Kimi K2", "context_length": 131072,
         "pricing": {"prompt": "0.00000014", "completion": "0.00000249"}}]},
        ["moonshotai/kimi-k2"]),
    "ollama-v1": ({"object": "list", "data": [
        {"id": "qwen3:8b", "object": "model", "created": 1750000000, "owned_by": "library"}]},
        ["qwen3:8b"]),
    "ollama-tags": ({"models": [
        {"name": "llama3.2:latest", "model": "llama3.2:latest", "size": 2019393189,
         "digest": "a80c4f17acd5", "details": {"family": "llama"}}]}, ["llama3.2:latest"]),
    "lmstudio": ({"data": [{"id": "qwen2.5-coder-7b-instruct", "object": "model",
                            "owned_by": "organization_owner"}], "object": "list"},
                 ["qwen2.5-coder-7b-instruct"]),
    "vllm": ({"object": "list", "data": [
        {"id": "Qwen/Qwen3-8B", "object": "model", "created": 1750000000, "owned_by": "vllm",
         "root": "Qwen/Qwen3-8B", "parent": None, "max_model_len": 40960,
         "permission": [{"id": "modelperm-1", "object": "model_permission"}]}]},
        ["Qwen/Qwen3-8B"]),
    "llamacpp": ({"models": [{"name": "gemma-3-4b-it-Q4_K_M.gguf",
                              "model": "gemma-3-4b-it-Q4_K_M.gguf", "type": "model"}],
                  "object": "list", "data": [{"id": "gemma-3-4b-it-Q4_K_M.gguf",
                                              "object": "model", "owned_by": "llamacpp",
                                              "meta": {"n_ctx_train": 131072}}]},
                 ["gemma-3-4b-it-Q4_K_M.gguf"]),
}


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    model_lists.forget()
    yield
    model_lists.forget()


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_known_shape(shape: str) -> None:
    body, ids = SHAPES[shape]
    assert parse_models(body) == ids


def test_hostile_listings() -> None:
    assert parse_models([1, 2]) == [] and parse_models({"data": "x"}) == []
    assert parse_models({"data": [None, 5, {"id": 7}, {"id": ""}, {"id": "a\x1b[2Jb"},
                                  {"id": "two\nlines"}, {"id": "x" * 201},
                                  {"id": "rtl\u202eevil"}, {"id": "ok"}, {"id": "ok"}]}) \
        == ["ok"]
    assert len(parse_models({"data": [{"id": f"m{i}"} for i in range(5000)]})) == 1000


def provider(server: FakeLLMServer, api: str = "chat", **kw: Any) -> ProviderConfig:
    url = server.url if api == "anthropic" else server.base_url
    return ProviderConfig("p", api, url, **kw)  # type: ignore[arg-type]


async def test_openai_style_listing_is_sorted_cached_and_sends_the_key(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KEP_TEST_KEY", KEY)
    with FakeLLMServer() as server:
        server.models = {"data": [{"id": "zeta"}, {"id": "alpha"}]}
        pc = provider(server, api_key_env="KEP_TEST_KEY")
        assert (await list_models(pc)).models == ("alpha", "zeta")
        assert (await list_models(pc)).models == ("alpha", "zeta")
        gets = [r for r in server.requests if r.method == "GET"]
    assert len(gets) == 1 and gets[0].path == "/v1/models"
    assert gets[0].headers["authorization"] == f"Bearer {KEY}"


async def test_anthropic_listing_keeps_its_order_and_uses_its_headers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KEP_TEST_KEY", KEY)
    with FakeLLMServer() as server:
        server.models = SHAPES["anthropic"][0]
        got = await list_models(provider(server, "anthropic", api_key_env="KEP_TEST_KEY"))
        [get] = server.requests
    assert got.models == ("claude-sonnet-4-5", "claude-haiku-4-5")
    assert get.path == "/v1/models" and get.headers["x-api-key"] == KEY
    assert "anthropic-version" in get.headers and "authorization" not in get.headers


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("answer", ["refused", "401", "404", "html", "huge"])
async def test_failures_are_one_line_without_the_key(answer: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KEP_TEST_KEY", KEY)
    with FakeLLMServer() as server:
        server.models = {"401": (401, {"error": {"message": f"Incorrect API key {KEY}"}}),
                         "404": (404, {"error": "no"}),
                         "html": b"<html>\x1b[2J not json</html>",
                         "huge": b'{"data": [' + b'{"id": "m"},' * 600_000 + b'{}]}',
                         "refused": None}[answer]
        url = (f"http://127.0.0.1:{closed_port()}/v1" if answer == "refused"
               else server.base_url)
        got = await list_models(ProviderConfig("p", "chat", url, "KEP_TEST_KEY"))
    assert got.models == () and got.error and "\n" not in got.error
    assert KEY not in got.error and KEY[:12] not in got.error
    again = await list_models(ProviderConfig("p", "chat", url, "KEP_TEST_KEY"))
    assert again.error  # a failure is not cached: the next open asks again


async def test_missing_key_is_not_a_request() -> None:
    with FakeLLMServer() as server:
        got = await list_models(ProviderConfig("p", "chat", server.base_url, "KEP_NO_SUCH_KEY"))
        assert got.error == "needs KEP_NO_SUCH_KEY" and not server.requests
