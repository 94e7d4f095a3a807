"""Compaction: the conversation so far summarised by the current model; never a tool call
cut from its result; reasoning kept whole in what stays; the originals kept in the store;
automatic at the threshold, in `kep run` too; deterministic with the offline model."""

from __future__ import annotations

import itertools
import json
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from conftest import KEP, kep_env
from fakes import recorded
from fakes.llm_server import FakeLLMServer
from shapes_testutil import Make, Run, bodies, providers, serving

from tuiapp.conversation import compaction
from tuiapp.conversation.session_history import compacted_view, history_for_model
from tuiapp.conversation.store import Store
from tuiapp.providers.offline import OfflineProvider
from tuiapp.settings.config_types import ModelOptions, ProviderConfig
from tuiapp.vocab.events import Compacted, Notice, ProviderError
from tuiapp.vocab.messages import Message, ToolCall


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    yield from serving()


@pytest.fixture
async def make(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Make]:
    async for factory in providers(server, monkeypatch):
        yield factory


def call(i: int) -> ToolCall:
    return ToolCall(f"c{i}", "readfile", {"filename": f"{i}.txt"})


def shapes() -> Iterator[list[Message]]:
    """Histories of every small shape: turns of text, single and parallel calls, a long turn
    of tool steps without a second user message."""
    steps = {"text": lambda i: [Message("assistant", f"answer {i}")],
             "call": lambda i: [Message("assistant", "", (call(i),)),
                                Message("tool", "r", tool_call_id=f"c{i}", name="readfile")],
             "two": lambda i: [Message("assistant", "x", (call(i), call(i + 100))),
                               Message("tool", "r", tool_call_id=f"c{i}", name="readfile"),
                               Message("tool", "r", tool_call_id=f"c{i + 100}", name="readfile")]}
    for combo in itertools.product(["user", *steps], repeat=4):
        history = [Message("user", "go")]
        for n, kind in enumerate(combo):
            history += [Message("user", f"u{n}")] if kind == "user" else steps[kind](n)
        yield history


def test_a_cut_never_separates_a_call_from_its_result() -> None:
    for history in shapes():
        cut = compaction.cut_point(history)
        head, tail = history[:cut], history[cut:]
        called_in_tail = {c.id for m in tail for c in m.tool_calls}
        assert all(m.tool_call_id in called_in_tail for m in tail if m.role == "tool")
        answered_in_head = {m.tool_call_id for m in head if m.role == "tool"}
        assert all(c.id in answered_in_head for m in head for c in m.tool_calls)
        assert tail and (cut == 0 or tail[0].role in ("user", "assistant"))


def test_tool_results_are_dropped_before_text() -> None:
    history = [Message("user", "question " * 10),
               Message("assistant", "", (call(1),)),
               Message("tool", "R" * 50_000, tool_call_id="c1", name="readfile"),
               Message("assistant", "the answer")]
    text = compaction.as_text(history, cap=300)
    assert "question" in text and "the answer" in text and "RRRR" not in text
    assert "left out" in text
    assert len(compaction.as_text(history * 500, cap=10_000)) <= 10_100


async def test_compact_summarises_with_the_current_model_and_goes_on(
        make: Make, server: FakeLLMServer, tmp_path: Path) -> None:
    server.add(recorded.responses_reasoning_tool_call(), {"text": "It says hello."},
               {"text": "The user read notes.txt; it says hello."},
               recorded.responses_followup("Continuing."))
    run = Run(make("responses", "openai", "gpt-5-mini"))
    with Store.open(tmp_path / "s.db") as store:
        sid = store.create_session(tmp_path, "openai/gpt-5-mini")
        run.conv.emit = lambda e: (store.record(sid, e), run.events.append(e))  # type: ignore
        await run.conv.turn("read notes")
        before = list(run.conv.history)
        run.conv._add(Message("user", "and now?"))  # a turn about to start
        assert await run.conv.compact()
        [done] = run.of(Compacted)
        assert (done.replaced, done.kept, done.automatic) == (len(before), 1, False)
        assert run.conv.history[0].content.endswith("it says hello.")
        summarising = bodies(server)[2]
        assert "tools" not in summarising and "reasoning" not in json.dumps(summarising["input"])
        assert recorded.ENCRYPTED not in json.dumps(summarising)
        assert "notes.txt" in json.dumps(summarising["input"])  # the calls, as text
        # What the store keeps: everything, and the compacted view for a resume.
        everything = store.load_messages(sid, for_resume=False)
        assert [m.content for m in everything[:len(before)]] == [m.content for m in before]
        resumed = store.load_messages(sid)
        assert [m.content for m in resumed[1:]] == ["and now?"]
        assert resumed[0].summary_keeps == 1 and resumed[0].content.endswith("says hello.")


@pytest.mark.slow
async def test_reasoning_in_what_stays_goes_back_whole(make: Make,
                                                       server: FakeLLMServer) -> None:
    """A long single turn: the cut falls before the reasoning step, which stays whole with
    its encrypted item, its commentary message and its call."""
    server.add({"tool_calls": [{"name": "readfile", "arguments": {"filename": "a"}}],
                "usage": {"input_tokens": 95, "output_tokens": 1}},
               {"text": "summary of the first step"},
               recorded.responses_reasoning_tool_call(),  # reports 200 input tokens: full
               {"text": "summary of both steps"},
               recorded.responses_followup("Both read."))
    p = make("responses", "openai", "gpt-5-mini")
    p.config = ProviderConfig("openai", "responses", p.config.base_url, "KEP_TEST_KEY",
                              options=ModelOptions(context_window=100))
    run = Run(p)
    assert await run.conv.turn("read a and notes") == "end_turn", run.of(ProviderError)
    first, second = run.of(Compacted)
    assert first.automatic and first.tokens_before == 95 and second.tokens_before == 200
    final = bodies(server)[4]["input"]
    kinds = [i.get("type") or i.get("role") for i in final]
    assert kinds[:1] == ["user"] and "reasoning" in kinds
    rs = final[kinds.index("reasoning")]
    assert rs["encrypted_content"] == recorded.ENCRYPTED
    assert kinds[kinds.index("reasoning") + 1:] == ["assistant", "function_call",
                                                    "function_call_output"]


@pytest.mark.parametrize("share", [0.5, 0.99])
async def test_automatic_only_at_the_threshold(share: float, make: Make,
                                               server: FakeLLMServer) -> None:
    server.add({"text": "one", "usage": {"input_tokens": 90, "output_tokens": 1}},
               {"text": "summary"}, {"text": "two"})
    p = make("chat", "local", "m")
    p.config = ProviderConfig("local", "chat", p.config.base_url, "KEP_TEST_KEY",
                              options=ModelOptions(context_window=100))
    run = Run(p)
    run.conv.compact_at = lambda: share
    await run.conv.turn("first")
    await run.conv.turn("second")
    assert bool(run.of(Compacted)) == (share < 0.9)


async def test_a_failed_summary_changes_nothing(make: Make, server: FakeLLMServer) -> None:
    server.add({"text": "one"}, {"error": 400, "message": "context too long"})
    run = Run(make("chat"))
    await run.conv.turn("first")
    run.conv.history.append(Message("user", "second"))
    before = list(run.conv.history)
    assert not await run.conv.compact()
    assert run.conv.history == before
    assert "compaction failed" in run.of(Notice)[-1].text


async def test_nothing_to_compact_is_one_notice() -> None:
    run = Run(OfflineProvider(ProviderConfig("offline", "offline"), ""))
    assert not await run.conv.compact()
    assert run.of(Notice)[0].text == "nothing to compact yet"


async def test_offline_summary_is_deterministic() -> None:
    summaries = []
    for _ in range(2):
        run = Run(OfflineProvider(ProviderConfig("offline", "offline"), ""))
        await run.conv.turn("read notes please")
        run.conv.history.append(Message("user", "next"))
        assert await run.conv.compact()
        summaries.append(run.of(Compacted)[0].summary)
    assert summaries[0] == summaries[1] and "read notes please" in summaries[0]


def test_compacted_view_over_several_compactions_and_garbage() -> None:
    a, b, c, d = (Message("user", x) for x in "abcd")
    s1 = compaction.summary_message("S1", 1)
    s2 = compaction.summary_message("S2", 2)
    assert compacted_view([a, b, s1, c, s2, d]) == [s2, b, c, d]
    assert compacted_view([a, b, compaction.summary_message("S0", 0), c]) == [
        compaction.summary_message("S0", 0), c]
    assert history_for_model([a, compaction.summary_message("S", 99)])[0].content.endswith("S")
    weird = Message.from_dict({"role": "user", "content": "x", "summary_keeps": "3"})
    assert weird.summary_keeps is None
    assert Message.from_dict({"role": "user", "content": "x", "summary_keeps": True}
                             ).summary_keeps is None


@pytest.mark.slow
def test_kep_run_compacts_automatically_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello from the notes\n")
    (tmp_path / "kep.toml").write_text("compact_at = 0.01\n[providers.offline]\n"
                                       "context_window = 50\n")
    res = subprocess.run([*KEP, "run", "--project", str(tmp_path), "--model", "offline",
                          "--yes", "--json", "readfile notes.txt"], capture_output=True,
                         text=True, env=kep_env(), timeout=60, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr
    events = [json.loads(line) for line in res.stdout.splitlines()]
    [done] = [e for e in events if e["type"] == "Compacted"]
    assert done["automatic"] and "readfile notes.txt" in done["summary"]
    plain = subprocess.run([*KEP, "run", "--project", str(tmp_path), "--model", "offline",
                            "--yes", "readfile notes.txt"], capture_output=True, text=True,
                           env=kep_env(), timeout=60, stdin=subprocess.DEVNULL)
    assert plain.returncode == 0 and "compacted" in plain.stderr
