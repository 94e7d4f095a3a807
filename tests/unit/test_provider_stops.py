"""Honest stops (refusal, length, content filter, incomplete, pause_turn), paragraphs between
output messages, provider error details, usage and cost, and what `kep run` does with them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from fakes import recorded
from fakes.llm_server import FakeLLMServer
from shapes_testutil import KEY, Make, Run, providers, serving

from tuiapp.vocab.events import Notice, ProviderError, TurnEnded, Usage


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    yield from serving()


@pytest.fixture
async def make(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Make]:
    async for factory in providers(server, monkeypatch):
        yield factory



@pytest.mark.parametrize(("api", "reply", "stop", "text"), [
    ("anthropic", recorded.anthropic_stop("refusal", ["I can't"]), "refusal", "I can't"),
    ("chat", recorded.chat_length_stop(), "max_tokens", "The first part of a long"),
    ("responses", recorded.responses_incomplete("content_filter"), "content_filter", "Partial"),
    ("responses", recorded.responses_incomplete("something_new"), "incomplete", "Partial"),
])
async def test_unfinished_stops_are_noticed(api: str, reply: dict[str, Any], stop: str,
                                            text: str, make: Make,
                                            server: FakeLLMServer) -> None:
    server.add(reply)
    run = Run(make(api))
    assert await run.conv.turn("go") == stop
    [notice] = run.of(Notice)
    assert notice.level == "warning" and stop.split("_")[0] in notice.text
    assert run.conv.history[-1].content == text  # partial text kept
    assert run.of(TurnEnded)[-1].stop_reason == stop


async def test_pause_turn_is_continued_by_kep(make: Make, server: FakeLLMServer) -> None:
    server.add(recorded.anthropic_stop("pause_turn", ["Searching…"]),
               recorded.anthropic_stop("end_turn", [" Found it."]))
    run = Run(make("anthropic"))
    assert await run.conv.turn("search") == "end_turn"
    assert run.text == "Searching… Found it."
    follow = server.requests[1].body["messages"]
    assert follow[-1] == {"role": "assistant", "content": [{"type": "text",
                                                            "text": "Searching…"}]}
    assert not run.of(Notice)


async def test_pause_turn_is_bounded(make: Make, server: FakeLLMServer) -> None:
    server.add(*[recorded.anthropic_stop("pause_turn", [f"step {i}. "]) for i in range(10)])
    run = Run(make("anthropic"))
    assert await run.conv.turn("search") == "pause_turn"
    assert len(server.requests) == 4  # the first request and three continuations
    assert "pause_turn" in run.of(Notice)[0].text


async def test_two_output_messages_are_two_paragraphs(make: Make,
                                                      server: FakeLLMServer) -> None:
    server.add(recorded.responses_two_messages(), {"text": "ok"})
    run = Run(make("responses", "openai", "gpt-5.5"))
    await run.conv.turn("links?")
    assert run.conv.history[-1].content == "I'll answer with links.\n\nHere are a few."
    await run.conv.turn("thanks")
    sent = server.requests[1].body["input"]
    assert [m.get("phase") for m in sent if m.get("role") == "assistant"] == [
        "commentary", "final_answer"]


async def test_openrouter_429_shows_the_upstream_detail(make: Make,
                                                        server: FakeLLMServer) -> None:
    server.add(*[recorded.openrouter_429()] * 3)
    run = Run(make("chat", "openrouter"))
    await run.conv.turn("hi")
    message = run.of(ProviderError)[0].message
    assert "Provider returned error (Novita)" in message and recorded.OPENROUTER_RAW in message
    assert KEY not in message and KEY[:12] not in message


async def test_anthropic_error_type_is_in_the_message(make: Make,
                                                      server: FakeLLMServer) -> None:
    server.add({"text": "a b c", "stream_error": "Overloaded", "error_after": 1})
    run = Run(make("anthropic"))
    await run.conv.turn("hi")
    assert "overloaded_error: Overloaded" in run.of(ProviderError)[0].message


async def test_usage_counts_cached_and_reasoning_tokens_and_cost(
        make: Make, server: FakeLLMServer) -> None:
    server.add(recorded.responses_two_messages())
    prices = {"": {"input": 1.0, "output": 10.0, "cached_input": 0.1}}
    run = Run(make("responses", prices=prices))
    await run.conv.turn("hi")
    usage = run.of(Usage)[-1]
    assert (usage.input_tokens, usage.output_tokens) == (200, 90)
    assert (usage.cached_tokens, usage.reasoning_tokens) == (128, 64)
    assert usage.cost == pytest.approx((72 * 1.0 + 128 * 0.1 + 90 * 10.0) / 1e6)


async def test_anthropic_input_counts_cache_reads(make: Make, server: FakeLLMServer) -> None:
    server.add(recorded.anthropic_stop("end_turn", ["hi"]))
    run = Run(make("anthropic"))
    await run.conv.turn("hi")
    usage = run.of(Usage)[-1]
    assert (usage.input_tokens, usage.cached_tokens, usage.output_tokens) == (1050, 1000, 120)
    assert usage.cost is None  # no prices configured


def _kep_run(root: Any, url: str, *argv: str) -> Any:
    import subprocess

    from conftest import KEP, kep_env

    (root / "kep.toml").write_text(f'[providers.fake]\napi = "chat"\nbase_url = "{url}"\n'
                                   '[tools]\nbuiltins = false\n')
    return subprocess.run([*KEP, "run", "--project", str(root), "-m", "fake/m", *argv, "hi"],
                          capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, env=kep_env())


@pytest.mark.slow
def test_kep_run_keeps_reasoning_off_stdout_and_in_its_own_json_events(tmp_path: Any) -> None:
    with FakeLLMServer([recorded.mistral_list_content()] * 2) as server:
        text = _kep_run(tmp_path, server.base_url)
        as_json = _kep_run(tmp_path, server.base_url, "--json")
    assert text.returncode == 0, text.stderr
    assert text.stdout == "The answer is 4.\n" and "2+2" not in text.stderr
    events = [json.loads(line) for line in as_json.stdout.splitlines()]
    thought = "".join(e["text"] for e in events if e["type"] == "ReasoningDelta")
    answer = "".join(e["text"] for e in events if e["type"] == "TextDelta")
    assert (thought, answer) == ("The user asks for 2+2. Simple arithmetic.", "The answer is 4.")


def test_kep_run_length_stop_keeps_text_and_exits_1(tmp_path: Any) -> None:
    with FakeLLMServer([recorded.chat_length_stop()]) as server:
        done = _kep_run(tmp_path, server.base_url)
    assert done.returncode == 1
    assert done.stdout == "The first part of a long\n"
    assert "max_tokens" in done.stderr and "Traceback" not in done.stderr
