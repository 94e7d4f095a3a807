"""Recorded shapes of real reasoning models and compatible servers (tests/fakes/recorded.py),
driven through the real SDKs and the real turn loop: content shapes, and reasoning carried
back to the model it came from (and only to it)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from fakes import recorded
from fakes.llm_server import FakeLLMServer
from shapes_testutil import Make, Run, bodies, providers, serving

from tuiapp.vocab.events import MessageAdded, ProviderError, Retrying, ToolFinished
from tuiapp.vocab.messages import Message, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    yield from serving()


@pytest.fixture
async def make(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Make]:
    async for factory in providers(server, monkeypatch):
        yield factory



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


async def test_chat_stream_without_done_ends_at_its_finish_reason(
        make: Make, server: FakeLLMServer) -> None:
    """Cerebras, Perplexity and Hugging Face's router send no [DONE]: a finish_reason is the
    end (a body cut before either: test_provider_round3)."""
    reply = recorded.chat_length_stop()
    reply["sse"] = [e for e in reply["sse"] if e["data"] != "[DONE]"]  # finish_reason, no [DONE]
    server.add(reply)
    run = Run(make("chat"))
    assert await run.conv.turn("go") == "max_tokens"
    assert not run.of(ProviderError) and run.text == "The first part of a long"


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
    run = Run(make("anthropic", "anthropic", "claude-haiku-4-5", reasoning="medium"))
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
    from tuiapp.conversation.store import Store

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


def test_message_round_trip_keeps_reasoning_and_ignores_garbage() -> None:
    msg = Message("assistant", "x")
    assert Message.from_dict({**msg.to_dict(), "reasoning": "not a dict"}).reasoning is None
    assert Message.from_dict({**msg.to_dict(), "reasoning": {"origin": 3}}).reasoning is None
    kept = Message.from_dict({**msg.to_dict(), "reasoning": {
        "origin": "chat|p|m", "text": "t", "items": [{"field": "reasoning"}, "junk", 5]}})
    assert kept.reasoning is not None and kept.reasoning.items == ({"field": "reasoning"},)
    assert MessageAdded(kept).to_json()["message"]["reasoning"]["origin"] == "chat|p|m"


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


def test_responses_reasoning_without_encrypted_content_is_not_replayed() -> None:
    from tuiapp.providers.openai_responses import to_input
    from tuiapp.vocab.messages import Reasoning

    origin = "responses|openai|gpt-5-mini"
    items = ({"type": "reasoning", "id": "rs_9", "summary": []},
             {"type": "message", "phase": "final_answer", "text": "hi"})
    history = [Message("user", "q"), Message("assistant", "hi",
                                             reasoning=Reasoning(origin, "", items))]
    assert to_input(history, origin)[1:] == [
        {"role": "assistant", "content": "hi", "phase": "final_answer"}]
