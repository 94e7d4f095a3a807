"""Round three of real services (tests/fakes/recorded.py), through the real SDKs and the real
turn loop: optional fields a model rejects are learned once per provider and model, chat
streams that end at their finish_reason, Gemini's thought signatures, DeepSeek's plain
reasoning items, inline <think> tags and Bedrock's recycled call ids."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import pytest
from fakes import recorded
from fakes.llm_server import FakeLLMServer
from shapes_testutil import Make, Run, bodies, providers, serving

from tuiapp.vocab.events import Notice, ProviderError, Retrying


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    yield from serving()


@pytest.fixture
async def make(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Make]:
    async for factory in providers(server, monkeypatch):
        yield factory


# ---- optional fields a model rejects -------------------------------------------------------


async def test_model_without_reasoning_works_and_is_learned_once(
        make: Make, server: FakeLLMServer) -> None:
    """gpt-4.1: include refused, then reasoning.summary refused; the answer still comes, one
    notice says what kep stopped sending, and the next request (a new provider object for
    the same model, as after a restart of the session) sends neither."""
    server.add(recorded.openai_rejects_include(),
               recorded.openai_rejects("reasoning.summary"),
               {"text": "Hi there."}, {"text": "Again."})
    run = Run(make("responses", "openai", "gpt-4.1"))
    assert await run.conv.turn("hello") == "end_turn", run.of(ProviderError)
    assert run.text == "Hi there."
    [notice] = run.of(Notice)
    assert "openai/gpt-4.1" in notice.text
    assert "reasoning.encrypted_content" in notice.text and "reasoning.summary" in notice.text
    last = bodies(server)[2]
    assert "include" not in last and "reasoning" not in last
    again = Run(make("responses", "openai", "gpt-4.1"))
    assert await again.conv.turn("more") == "end_turn"
    fourth = bodies(server)[3]
    assert "include" not in fourth and "reasoning" not in fourth
    assert not again.of(Notice)  # said once
    assert len(server.requests) == 4


async def test_what_one_model_rejects_is_not_dropped_for_another(
        make: Make, server: FakeLLMServer) -> None:
    server.add(recorded.openai_rejects_include(), {"text": "a"},
               recorded.responses_reasoning_tool_call(), recorded.responses_followup())
    await Run(make("responses", "openai", "gpt-4o")).conv.turn("x")
    run = Run(make("responses", "openai", "gpt-5-mini"))
    assert await run.conv.turn("read notes") == "end_turn", run.of(ProviderError)
    assert bodies(server)[2]["include"] == ["reasoning.encrypted_content"]


async def test_same_model_name_on_another_provider_is_learned_apart(
        make: Make, server: FakeLLMServer) -> None:
    server.add(recorded.openai_rejects_include(), {"text": "a"}, {"text": "b"})
    await Run(make("responses", "azure", "gpt-4o")).conv.turn("x")
    await Run(make("responses", "openai", "gpt-4o")).conv.turn("y")
    assert bodies(server)[2]["include"] == ["reasoning.encrypted_content"]


async def test_reasoning_item_error_is_not_a_rejected_parameter(
        make: Make, server: FakeLLMServer) -> None:
    server.add(recorded.openai_orphan_reasoning_item(), {"text": "later"})
    run = Run(make("responses", "openai", "gpt-5-mini"))
    assert await run.conv.turn("x") == "error"
    assert "of type 'reasoning'" in run.of(ProviderError)[0].message
    assert len(server.requests) == 1  # no retry without reasoning
    assert not run.of(Notice)
    await run.conv.turn("y")
    body = bodies(server)[1]
    assert body["include"] == ["reasoning.encrypted_content"] and "reasoning" in body


async def test_endless_rejections_end_as_one_error_not_a_loop(
        make: Make, server: FakeLLMServer) -> None:
    """A server that refuses everything: kep drops each optional field once, then reports."""
    refuse = recorded.openai_rejects("reasoning.summary")
    server.add(*[refuse] * 10)
    run = Run(make("responses", "openai", "m"))
    assert await run.conv.turn("x") == "error"
    assert len(server.requests) <= 4


async def test_chat_server_rejecting_stream_options_is_learned_with_a_notice(
        make: Make, server: FakeLLMServer) -> None:
    server.add({"error": 400, "message": "Unrecognized request argument supplied: "
                                          "stream_options"}, {"text": "ok"}, {"text": "ok"})
    run = Run(make("chat", "local", "qwen3"))
    assert await run.conv.turn("x") == "end_turn"
    assert "stream_options" in run.of(Notice)[0].text
    await Run(make("chat", "local", "qwen3")).conv.turn("y")
    assert "stream_options" not in bodies(server)[2]


# ---- chat streams without [DONE] -------------------------------------------------------------


async def test_stream_without_done_ends_cleanly_at_its_finish_reason(
        make: Make, server: FakeLLMServer) -> None:
    server.add(recorded.hf_router_cerebras())
    run = Run(make("chat", "hf", "openai/gpt-oss-120b:cerebras"))
    assert await run.conv.turn("hi") == "end_turn", run.of(ProviderError)
    assert run.text == "Hello from Cerebras."
    assert not run.of(ProviderError) and not run.of(Retrying)
    assert run.conv.usage.input_tokens == 88
    assert len(server.requests) == 1


async def test_tool_call_in_a_stream_without_done_runs(make: Make,
                                                       server: FakeLLMServer) -> None:
    server.add(recorded.hf_router_cerebras(tool_call=True), recorded.hf_router_cerebras())
    run = Run(make("chat", "hf", "openai/gpt-oss-120b:cerebras"))
    assert await run.conv.turn("read notes") == "end_turn", run.of(ProviderError)
    assert [c.arguments for c in run.ran] == [{"filename": "notes.txt"}]


async def test_stream_cut_before_any_finish_is_still_incomplete(
        make: Make, server: FakeLLMServer) -> None:
    reply = recorded.hf_router_cerebras()
    reply["sse"] = reply["sse"][:-1]  # neither finish_reason nor [DONE]
    server.add(reply, reply, reply)
    run = Run(make("chat", "hf", "m"))
    assert await run.conv.turn("hi") == "error"
    assert "ended before the reply was complete" in run.of(ProviderError)[0].message


# ---- Gemini thought signatures, DeepSeek reasoning_text -----------------------------------------


async def test_gemini_thought_signature_goes_back_on_its_call(
        make: Make, server: FakeLLMServer) -> None:
    server.add(recorded.gemini3_tool_call(), recorded.gemini3_followup())
    run = Run(make("chat", "gemini", "gemini-3-flash-preview"))
    assert await run.conv.turn("read notes") == "end_turn", run.of(ProviderError)
    assert run.text == "The notes say hello."
    [call] = server.requests[1].body["messages"][1]["tool_calls"]
    assert call["id"] == "function-call-5093271"
    assert call["extra_content"] == {"google": {"thought_signature":
                                                recorded.GEMINI_SIGNATURE}}


async def test_gemini_signature_survives_the_store_and_stays_with_its_model(
        make: Make, server: FakeLLMServer, tmp_path: object) -> None:
    from pathlib import Path

    from tuiapp.conversation.store import Store

    server.add(recorded.gemini3_tool_call(), {"text": "ok"}, recorded.gemini3_followup("more"),
               {"text": "other"})
    run = Run(make("chat", "gemini", "gemini-3-flash-preview"))
    root = Path(str(tmp_path))
    with Store.open(root / "s.db") as store:
        sid = store.create_session(root, "gemini/gemini-3-flash-preview")
        run.conv.emit = lambda e: (store.record(sid, e), run.events.append(e))  # type: ignore
        await run.conv.turn("read notes")
        history = store.load_messages(sid)
    resumed = Run(make("chat", "gemini", "gemini-3-flash-preview"), history)
    assert await resumed.conv.turn("again") == "end_turn", resumed.of(ProviderError)
    other = Run(make("chat", "openrouter", "some/other"), history)
    await other.conv.turn("again")
    assert recorded.GEMINI_SIGNATURE not in json.dumps(server.requests[-1].body)


async def test_deepseek_responses_reasoning_text_is_kept_in_the_follow_up(
        make: Make, server: FakeLLMServer) -> None:
    server.add(recorded.deepseek_responses_tool_call(), recorded.deepseek_responses_followup())
    run = Run(make("responses", "deepseek", "deepseek-v4"))
    assert await run.conv.turn("read notes") == "end_turn", run.of(ProviderError)
    assert run.thinking == recorded.DEEPSEEK_RS_TEXT
    item = bodies(server)[1]["input"][1]
    assert item["type"] == "reasoning" and "encrypted_content" not in item
    assert item["content"] == [{"type": "reasoning_text", "text": recorded.DEEPSEEK_RS_TEXT}]


# ---- inline <think> ---------------------------------------------------------------------


@pytest.mark.parametrize("deltas", [
    ["<think>", "Count the letters.", "</think>", "\n\nThree."],
    ["<thi", "nk>Count the", " letters.</th", "ink>\n\nThr", "ee."],
    ["\n<think>Count the letters.</think>Three."],
    list("<think>Count the letters.</think>\n\nThree."),
])
async def test_inline_think_is_reasoning_not_answer(deltas: list[str], make: Make,
                                                    server: FakeLLMServer) -> None:
    server.add(recorded.think_tags(deltas), {"text": "ok"})
    run = Run(make("chat", "groq", "deepseek-r1-distill-llama-70b"))
    assert await run.conv.turn("how many r in strawberry") == "end_turn"
    assert run.thinking.strip() == "Count the letters."
    assert run.text == "Three."
    reply = run.conv.history[-1]
    assert reply.content == "Three." and reply.reasoning is not None
    assert reply.reasoning.text.strip() == "Count the letters."
    await run.conv.turn("next")
    assert "Count the letters" not in json.dumps(server.requests[1].body)


async def test_unclosed_think_at_stream_end_is_reasoning(make: Make,
                                                         server: FakeLLMServer) -> None:
    server.add(recorded.think_tags(["<think>Still thinking when the", " budget ran out"]))
    run = Run(make("chat", "local", "qwen3"))
    await run.conv.turn("x")
    assert run.text == "" and run.thinking == "Still thinking when the budget ran out"


@pytest.mark.parametrize("deltas", [
    ["The tag <think> is used by R1.", " </think> closes it."],
    ["Answer first. <thi", "nk>not a thought</think>"],
    ["<thinking>is not the tag</thinking>"],
])
async def test_think_tags_only_at_the_start_of_the_answer(deltas: list[str], make: Make,
                                                          server: FakeLLMServer) -> None:
    server.add(recorded.think_tags(deltas))
    run = Run(make("chat", "local", "qwen3"))
    await run.conv.turn("x")
    assert run.text == "".join(deltas) and run.thinking == ""


def test_think_splitter_hostile_sizes() -> None:
    from tuiapp.providers.think_tags import ThinkSplitter

    s = ThinkSplitter()
    big = "x" * 2_000_000
    out = [s.feed("<think>"), s.feed(big), s.feed("</think>" + "\x1b[2J" + big), s.end()]
    thought = "".join(o[1] for o in out)
    answer = "".join(o[0] for o in out)
    assert thought == big and answer == "\x1b[2J" + big
    s = ThinkSplitter()
    parts = [s.feed(c) for c in "<think>" + "<" * 500 + "</think>ok"] + [s.end()]
    assert "".join(p[1] for p in parts) == "<" * 500
    assert "".join(p[0] for p in parts) == "ok"


# ---- Bedrock's recycled call ids ---------------------------------------------------------


async def test_bedrock_call_0_ids_made_unique_and_paired(make: Make,
                                                         server: FakeLLMServer) -> None:
    server.add(recorded.bedrock_responses_call(filename="a.txt", fc_id="fc_1"),
               recorded.bedrock_responses_call(filename="b.txt", fc_id="fc_2"),
               {"text": "Both read."})
    run = Run(make("responses", "bedrock", "openai.gpt-5.5"))
    assert await run.conv.turn("read a then b") == "end_turn", run.of(ProviderError)
    follow = bodies(server)[2]["input"]
    calls = [i["call_id"] for i in follow if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in follow if i.get("type") == "function_call_output"]
    assert len(calls) == 2 and len(set(calls)) == 2
    assert outputs == calls  # each result paired with its own call
    args = [json.loads(i["arguments"])["filename"] for i in follow
            if i.get("type") == "function_call"]
    assert args == ["a.txt", "b.txt"]
    stored = [c.id for m in run.conv.history for c in m.tool_calls]
    assert stored == calls  # the store and the wire agree
