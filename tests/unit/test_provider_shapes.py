"""Recorded shapes of real reasoning models and compatible servers (tests/fakes/recorded.py),
driven through the real SDKs and the real turn loop: content shapes, reasoning carried back
to the model it came from, honest stops, error details, usage."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from fakes import recorded
from fakes.llm_server import FakeLLMServer

from tuiapp.config import ApprovalConfig, ProviderConfig
from tuiapp.core.conversation import Conversation, allow_all
from tuiapp.core.events import (
    Event,
    MessageAdded,
    Notice,
    ProviderError,
    ReasoningDelta,
    Retrying,
    TextDelta,
    ToolFinished,
    TurnEnded,
    Usage,
)
from tuiapp.core.messages import Message, ToolCall
from tuiapp.providers.anthropic import AnthropicProvider
from tuiapp.providers.base import Provider
from tuiapp.providers.openai_chat import ChatProvider
from tuiapp.providers.openai_responses import ResponsesProvider
from tuiapp.tools.model import ToolSpec

KEY = "sk-test-SECRET-0123456789abcdef"
CLASSES = {"chat": ChatProvider, "responses": ResponsesProvider, "anthropic": AnthropicProvider}
READFILE = ToolSpec(
    "readfile", "Read a file",
    {"type": "object", "properties": {"filename": {"type": "string"}}, "required": ["filename"]},
    "keprompt", "/x/readfile")


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as s:
        yield s


Make = Callable[..., Provider]


@pytest.fixture
async def make(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Make]:
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


# ---- 1. content shapes --------------------------------------------------------------------

async def test_mistral_list_content_is_text_and_thinking(make: Make,
                                                         server: FakeLLMServer) -> None:
    server.add(recorded.mistral_list_content())
    run = Run(make("chat"))
    assert await run.conv.turn("2+2?") == "end_turn"
    assert run.text == "The answer is 4."
    assert run.thinking == "The user asks for 2+2. Simple arithmetic."
    assert run.conv.history[-1].content == "The answer is 4."


async def test_no_finish_reason_with_done_is_complete_and_its_call_runs(
        make: Make, server: FakeLLMServer) -> None:
    server.add(recorded.no_finish_reason_tool_call(), {"text": "done"})
    run = Run(make("chat"))
    assert await run.conv.turn("read notes") == "end_turn"
    assert [c.arguments for c in run.ran] == [{"filename": "notes.txt"}]
    assert not run.of(Retrying) and not run.of(ProviderError)
    assert len(server.requests) == 2  # no retried (billed) requests


async def test_chat_stream_without_done_is_incomplete(make: Make, server: FakeLLMServer) -> None:
    reply = recorded.chat_length_stop()
    reply["sse"] = [e for e in reply["sse"] if e["data"] != "[DONE]"]  # finish_reason, no [DONE]
    server.add(reply, reply, reply)
    run = Run(make("chat"))
    assert await run.conv.turn("go") == "error"
    assert "ended before the reply was complete" in run.of(ProviderError)[0].message


async def test_empty_ids_and_null_arguments(make: Make, server: FakeLLMServer) -> None:
    calls = [{"index": i, "id": "", "type": "function",
              "function": {"name": "readfile", "arguments": args}}
             for i, args in enumerate((None, "null"))]
    reply = recorded._chat("m", [{"tool_calls": calls}], finish="tool_calls", usage=None)
    server.add(reply, {"text": "ok"})
    run = Run(make("chat"))
    await run.conv.turn("go")
    [requested] = [m for m in run.conv.history if m.tool_calls]
    ids = [c.id for c in requested.tool_calls]
    assert len(set(ids)) == 2 and all(ids)  # ids made up, distinct
    assert all(c.arguments == {} and c.arguments_error is None for c in requested.tool_calls)
    # The follow-up pairs each result with its call by those ids.
    sent = server.requests[1].body["messages"]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ids


async def test_openrouter_reasoning_and_details_shown_once_and_sent_back(
        make: Make, server: FakeLLMServer) -> None:
    details = [{"type": "reasoning.text", "text": "Think", "index": 0,
                "format": "anthropic-claude-v1"},
               {"type": "reasoning.text", "text": "ing.", "signature": "sig1", "index": 0}]
    deltas = [{"content": "", "reasoning": d["text"], "reasoning_details": [d]} for d in details]
    deltas.append({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                   "function": {"name": "readfile",
                                                "arguments": '{"filename":"a"}'}}]})
    server.add(recorded._chat("x", deltas, finish="tool_calls", usage=None), {"text": "ok"})
    run = Run(make("chat"))
    await run.conv.turn("go")
    assert run.thinking == "Thinking."
    assistant = server.requests[1].body["messages"][1]
    assert assistant["reasoning"] == "Thinking."
    assert assistant["reasoning_details"] == [{"type": "reasoning.text", "text": "Thinking.",
                                               "index": 0, "format": "anthropic-claude-v1",
                                               "signature": "sig1"}]


# ---- 2. reasoning carried back --------------------------------------------------------------

async def test_deepseek_gets_its_reasoning_content_back(make: Make,
                                                        server: FakeLLMServer) -> None:
    server.add(recorded.deepseek_reasoning_tool_call(), recorded.deepseek_followup())
    run = Run(make("chat", "deepseek", "deepseek-reasoner"))
    assert await run.conv.turn("read notes") == "end_turn", run.of(ProviderError)
    assert run.text == "The file says hello."
    assert run.thinking == recorded.DEEPSEEK_THOUGHT
    assert run.conv.usage.cached_tokens == 256 and run.conv.usage.reasoning_tokens == 25


async def test_deepseek_fake_rejects_a_follow_up_without_it(make: Make,
                                                            server: FakeLLMServer) -> None:
    """The fake is as strict as the real server: another model's history has no
    reasoning_content to send, and the follow-up is refused."""
    server.add(recorded.deepseek_reasoning_tool_call(), recorded.deepseek_followup())
    run = Run(make("chat", "deepseek", "deepseek-reasoner"))
    other = make("chat", "deepseek", "another-model")
    execute = run.execute

    async def switch_then_execute(spec: ToolSpec, call: ToolCall, emit: Any) -> ToolFinished:
        run.conv.provider = other  # mid-turn: the reasoning is now foreign
        return await execute(spec, call, emit)

    run.conv.executor = switch_then_execute
    await run.conv.turn("read notes")
    assert "Missing `reasoning_content`" in run.of(ProviderError)[0].message


async def test_responses_reasoning_item_goes_back_with_encrypted_content(
        make: Make, server: FakeLLMServer) -> None:
    server.add(recorded.responses_reasoning_tool_call(), recorded.responses_followup())
    run = Run(make("responses", "openai", "gpt-5-mini"))
    assert await run.conv.turn("read notes") == "end_turn", run.of(ProviderError)
    assert "Reading the file" in run.thinking
    first, follow = bodies(server)
    assert first["store"] is False and first["include"] == ["reasoning.encrypted_content"]
    kinds = [i.get("type") or i.get("role") for i in follow["input"]]
    assert kinds == ["user", "reasoning", "assistant", "function_call", "function_call_output"]
    assert follow["input"][1]["encrypted_content"] == recorded.ENCRYPTED
    assert "status" not in follow["input"][1]  # output-only field
    assert follow["input"][2] == {"role": "assistant", "content": "Reading it now.",
                                  "phase": "commentary"}


async def test_anthropic_thinking_blocks_go_back_signed_before_tool_use(
        make: Make, server: FakeLLMServer) -> None:
    server.add(recorded.anthropic_thinking_tool_use(), recorded.anthropic_followup())
    run = Run(make("anthropic", "anthropic", "claude-opus-4-5", reasoning="medium"))
    assert await run.conv.turn("read notes") == "end_turn", run.of(ProviderError)
    assert run.thinking.startswith("I need the file to answer.")
    first, follow = bodies(server)
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert first["max_tokens"] > 8192
    blocks = follow["messages"][1]["content"]
    assert [b["type"] for b in blocks] == ["thinking", "redacted_thinking", "text", "tool_use"]
    assert blocks[0] == {"type": "thinking", "thinking": "I need the file to answer.",
                         "signature": recorded.SIGNATURE}
    assert blocks[1] == {"type": "redacted_thinking", "data": recorded.REDACTED}


@pytest.mark.parametrize("api", ["responses", "anthropic", "chat"])
async def test_switching_model_drops_foreign_reasoning(api: str, make: Make,
                                                       server: FakeLLMServer) -> None:
    first = {"responses": recorded.responses_reasoning_tool_call,
             "anthropic": recorded.anthropic_thinking_tool_use,
             "chat": recorded.deepseek_reasoning_tool_call}[api]()
    server.add(first, {"text": "ok"}, {"text": "fine"})
    run = Run(make(api, "one", "model-a"))
    await run.conv.turn("read notes")
    run.conv.provider = make(api, "two", "model-b")
    assert await run.conv.turn("again") == "end_turn"
    sent = json.dumps(server.requests[-1].body)
    for foreign in (recorded.ENCRYPTED, recorded.SIGNATURE, recorded.REDACTED,
                    "reasoning_content", '"phase"'):
        assert foreign not in sent


async def test_reasoning_survives_the_session_store(make: Make, server: FakeLLMServer,
                                                    tmp_path: Any) -> None:
    from tuiapp.core.store import Store

    server.add(recorded.anthropic_thinking_tool_use(), {"text": "ok"},
               recorded.anthropic_followup("again ok"))
    run = Run(make("anthropic", "anthropic", "claude-test", reasoning="low"))
    with Store.open(tmp_path / "s.db") as store:
        sid = store.create_session(tmp_path, "anthropic/claude-sonnet-4-5")
        run.conv.emit = lambda e: (store.record(sid, e), run.events.append(e))  # type: ignore
        await run.conv.turn("read notes")
        history = store.load_messages(sid)
    resumed = Run(make("anthropic", "anthropic", "claude-test", reasoning="low"), history)
    # The resumed history still carries the signed blocks: the strict follow-up accepts it.
    assert await resumed.conv.turn("more") == "end_turn", resumed.of(ProviderError)


# ---- 3. reasoning configurable ---------------------------------------------------------------

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


# ---- 4. honest stops -----------------------------------------------------------------------

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


# ---- 5. paragraphs, error details ----------------------------------------------------------

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


# ---- 7. usage and cost ---------------------------------------------------------------------

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


def test_message_round_trip_keeps_reasoning_and_ignores_garbage() -> None:
    msg = Message("assistant", "x")
    assert Message.from_dict({**msg.to_dict(), "reasoning": "not a dict"}).reasoning is None
    assert Message.from_dict({**msg.to_dict(), "reasoning": {"origin": 3}}).reasoning is None
    kept = Message.from_dict({**msg.to_dict(), "reasoning": {
        "origin": "chat|p|m", "text": "t", "items": [{"field": "reasoning"}, "junk", 5]}})
    assert kept.reasoning is not None and kept.reasoning.items == ({"field": "reasoning"},)
    assert MessageAdded(kept).to_json()["message"]["reasoning"]["origin"] == "chat|p|m"


# ---- kep run: reasoning apart, unfinished replies exit 1 --------------------------------------

def _kep_run(root: Any, url: str, *argv: str) -> Any:
    import subprocess

    from conftest import KEP, kep_env

    (root / "kep.toml").write_text(f'[providers.fake]\napi = "chat"\nbase_url = "{url}"\n'
                                   '[tools]\nbuiltins = false\n')
    return subprocess.run([*KEP, "run", "--project", str(root), "-m", "fake/m", *argv, "hi"],
                          capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, env=kep_env())


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


# ---- config: reasoning and prices, hostile values ----------------------------------------------

def test_reasoning_and_prices_are_read() -> None:
    from pathlib import Path

    from tuiapp.config import parse

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

    from tuiapp.config import ConfigError, parse

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


def test_hostile_content_and_reasoning_shapes() -> None:
    from tuiapp.providers.chat_shapes import ReasoningFields, split_content

    assert split_content([5, None, "a", {"type": "image_url"}, {"type": "text", "text": "b"},
                          {"type": "thinking", "thinking": "t"},
                          {"type": "reasoning", "text": "r"}]) == ("ab", "tr")
    assert split_content({"type": "text", "text": "x"}) == ("x", "")
    assert split_content(7) == ("", "")
    fields = ReasoningFields()
    assert fields.add({"reasoning_details": "not a list", "reasoning": 5}) == ""
    assert fields.add({"reasoning_details": [3, {"index": "x", "text": "a"}]}) == "a"
    assert fields.add({"reasoning_content": "\x1b[2J" * 3}) == "\x1b[2J" * 3  # UI strips it
    assert [i["field"] for i in fields.items()] == ["reasoning_content", "reasoning_details"]


async def test_earlier_answers_reasoning_is_not_resent(make: Make,
                                                       server: FakeLLMServer) -> None:
    """reasoning_content goes back only next to tool calls (DeepSeek needs it there; on a
    plain answer some servers refuse it)."""
    deltas = [{"reasoning_content": "hmm"}, {"content": "Paris."}]
    server.add(recorded._chat("deepseek-reasoner", deltas, finish="stop", usage=None),
               {"text": "ok"})
    run = Run(make("chat", "deepseek", "deepseek-reasoner"))
    await run.conv.turn("capital of France?")
    await run.conv.turn("and Spain?")
    assert "reasoning_content" not in json.dumps(server.requests[1].body)


async def test_responses_off_falls_back_to_none_where_minimal_is_refused(
        make: Make, server: FakeLLMServer) -> None:
    server.add({"error": 400, "message": "Unsupported value: 'minimal' is not supported with "
                                         "the 'gpt-5.1' model for 'reasoning.effort'."},
               {"text": "ok"})
    run = Run(make("responses", reasoning="off"))
    assert await run.conv.turn("hi") == "end_turn"
    assert [b.get("reasoning") for b in bodies(server)] == [{"effort": "minimal"},
                                                            {"effort": "none"}]


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


def test_responses_reasoning_without_encrypted_content_is_not_replayed() -> None:
    from tuiapp.core.messages import Reasoning
    from tuiapp.providers.openai_responses import to_input

    origin = "responses|openai|gpt-5-mini"
    items = ({"type": "reasoning", "id": "rs_9", "summary": []},
             {"type": "message", "phase": "final_answer", "text": "hi"})
    history = [Message("user", "q"), Message("assistant", "hi",
                                             reasoning=Reasoning(origin, "", items))]
    assert to_input(history, origin)[1:] == [
        {"role": "assistant", "content": "hi", "phase": "final_answer"}]
