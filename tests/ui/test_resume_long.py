"""A long saved session opens with only its newest messages drawn; earlier ones on request."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tui_helpers import SIZE, app_for, make_project, send, until, wait_idle

from tuiapp.conversation.store import Store
from tuiapp.ui.widgets.transcript import (
    HISTORY_PAGE,
    HISTORY_TAIL,
    EarlierMessages,
    Transcript,
    UserMessage,
)
from tuiapp.vocab.events import MessageAdded
from tuiapp.vocab.messages import Message, ToolCall


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


def long_session(store: Store, root: Path, turns: int) -> str:
    sid = store.create_session(root, "offline")
    for t in range(turns):
        store.record(sid, MessageAdded(Message("user", f"question {t}")))
        if t % 7 == 3:  # a call and its result, which a page must never split
            call = ToolCall(f"c{t}", "shout", {"path": "notes.txt"})
            store.record(sid, MessageAdded(Message("assistant", "", tool_calls=(call,))))
            store.record(sid, MessageAdded(Message("tool", f"RESULT {t}", tool_call_id=call.id)))
        store.record(sid, MessageAdded(Message("assistant", f"answer {t}")))
    return sid


def shown_questions(transcript: Transcript) -> list[int]:
    return [int(str(u.render()).split()[-1]) for u in transcript.query(UserMessage)]


@pytest.mark.slow
async def test_a_long_session_draws_its_tail_and_pages_back_on_request(proj: Path) -> None:
    store = Store.open()
    turns = 250
    sid = long_session(store, proj, turns)
    history = store.load_messages(sid)
    app = app_for(proj, store=store, session_id=sid, history=history)
    async with app.run_test(size=(80, 24)) as pilot:
        transcript = app.query_one(Transcript)
        await until(pilot, lambda: transcript.query(EarlierMessages), what="the history")
        # The newest screenful comes first; the rest of the tail right after it.
        assert shown_questions(transcript)[-1] == turns - 1
        await until(pilot, lambda: len(shown_questions(transcript)) >= HISTORY_TAIL // 2 - 2,
                    what="the rest of the tail")
        await pilot.pause()
        shown = shown_questions(transcript)
        assert shown[-1] == turns - 1 and len(shown) <= HISTORY_TAIL // 2 + 1
        assert shown == list(range(shown[0], turns))  # the tail, in order, nothing skipped
        marker = transcript.query_one(EarlierMessages)
        assert history[marker.count].role != "tool"  # a page starts at a whole turn
        assert [m.content for m in history[marker.count:] if m.role == "user"] == [
            f"question {q}" for q in shown]
        assert f"{marker.count:,} earlier messages" in str(marker.render())
        # Every drawn call block has its result: no page starts between a call and it.
        assert all(b.status == "ok" for b in transcript.query(".tool-block"))  # type: ignore[attr-defined]
        assert app.chat.history == history  # the model still gets the whole session

        before = marker.count
        marker.focus()
        await pilot.press("enter")
        await until(pilot, lambda: not marker.is_attached or marker.count < before,
                    what="an earlier page")
        assert marker.count >= before - HISTORY_PAGE - 1
        shown = shown_questions(transcript)
        assert shown == list(range(shown[0], turns)) and shown[0] < turns - HISTORY_TAIL // 2
        # Two requests at once (a double click) draw the page once.
        before = marker.count
        await asyncio.gather(marker.action_show_earlier(), marker.action_show_earlier())
        shown = shown_questions(transcript)
        assert shown == list(range(shown[0], turns)), "a page was drawn twice"
        assert not marker.is_attached or marker.count < before
        while marker.is_attached:  # page back to the very first message
            count = marker.count
            await pilot.click(EarlierMessages)
            await until(pilot, lambda c=count: not marker.is_attached or marker.count < c,
                        what="another page")
        assert shown_questions(transcript) == list(range(turns))
        assert len(transcript.query(".tool-block")) == len(range(3, turns, 7))
    store.close()


async def test_a_short_session_has_no_marker(proj: Path) -> None:
    store = Store.open()
    sid = long_session(store, proj, 5)
    app = app_for(proj, store=store, session_id=sid, history=store.load_messages(sid))
    async with app.run_test(size=SIZE) as pilot:
        transcript = app.query_one(Transcript)
        await until(pilot, lambda: len(transcript.query(UserMessage)) == 5, what="the history")
        assert not transcript.query(EarlierMessages)
    store.close()


async def test_a_resumed_long_session_sends_the_model_every_message(proj: Path) -> None:
    """Only the tail is drawn, but the next request carries the whole session, in order."""
    from fakes.llm_server import FakeLLMServer

    store = Store.open()
    turns = 400
    sid = long_session(store, proj, turns)
    history = store.load_messages(sid)
    with FakeLLMServer([{"text": "fine"}]) as server:
        (proj / "kep.toml").write_text(
            '[tools]\nbuiltins = false\n[providers.fake]\napi = "chat"\n'
            f'base_url = "{server.base_url}"\n')
        app = app_for(proj, model="fake/m", store=store, session_id=sid, history=history)
        async with app.run_test(size=(80, 24)) as pilot:
            transcript = app.query_one(Transcript)
            await until(pilot, lambda: len(shown_questions(transcript)) >= HISTORY_TAIL // 2 - 2,
                        what="the tail")
            await send(pilot, "and now?")
            await wait_idle(pilot)
        sent = server.requests[0].body["messages"]
    store.close()
    contents = [m.get("content") for m in sent if m["role"] == "user"]
    assert contents == [f"question {t}" for t in range(turns)] + ["and now?"]
    assert sum(1 for m in sent if m["role"] == "tool") == len(range(3, turns, 7))
    assert len(sent) >= len(history) + 1


async def test_switching_session_while_the_tail_is_drawn_draws_nothing_stale(proj: Path) -> None:
    store = Store.open()
    sid = long_session(store, proj, 250)
    app = app_for(proj, store=store, session_id=sid, history=store.load_messages(sid))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.query(EarlierMessages), what="the history")
        await app.action_new_session()  # at once: the rest of the tail is not drawn yet
        for _ in range(5):
            await pilot.pause()
        assert not app.query_one(Transcript).query(UserMessage)
        assert not app.query(EarlierMessages)
    store.close()


def test_a_screenful_is_estimated_from_the_newest_messages() -> None:
    from tuiapp.ui.widgets.history_blocks import screenful_start

    short = [Message("user", f"q{i}") if i % 2 == 0 else Message("assistant", f"a{i}")
             for i in range(100)]
    start = screenful_start(short, 100, 24, 80)
    assert 90 <= start < 96  # three rows each: about eight messages fill 24 rows
    huge = [*short, Message("user", "x" * 2_000_000), Message("assistant", "ok")]
    assert screenful_start(huge, 102, 24, 80) == 100  # one 2 MB line more than fills it
    lines = [*short, Message("assistant", "\n\t\n" * 50)]
    assert screenful_start(lines, 101, 40, 80) == 100
    calls = tuple(ToolCall(f"c{i}", "shout", {}) for i in range(500))
    with_calls = [*short, Message("assistant", "", tool_calls=calls),
                  *(Message("tool", "r", tool_call_id=c.id) for c in calls)]
    # Never a page that starts on a tool result: it starts at the call.
    assert screenful_start(with_calls, len(with_calls), 24, 80) == 100
    assert screenful_start(short, 0, 24, 80) == 0 and screenful_start(short, 100, 0, 80) == 100
