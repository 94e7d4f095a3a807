"""OrderedRecorder: a huge event is written by a thread, so the event loop goes on; what
is shown of each event still comes after it is on disk, in the order the events came."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from tuiapp.conversation.recorder import BIG_EVENT, OrderedRecorder, SessionRecorder
from tuiapp.conversation.store import Store
from tuiapp.vocab.events import MessageAdded, TextDelta, TurnEnded
from tuiapp.vocab.messages import Message

HUGE = "the quick brown fox\n\n" * (10_000_000 // 21)  # 10 MB of prose


def _open(tmp_path: Path) -> tuple[Store, str]:
    store = Store.open(tmp_path / "sessions.db")
    return store, store.create_session(tmp_path, "m")


def _messages(path: Path, sid: str) -> list[Message]:
    with Store.open(path) as other:  # another connection: what is really on disk
        return other.load_messages(sid)


async def test_small_events_are_on_disk_before_record_returns(tmp_path: Path) -> None:
    store, sid = _open(tmp_path)
    rec = OrderedRecorder(SessionRecorder(store, sid), asyncio.get_running_loop())
    shown: list[str] = []
    rec.record(MessageAdded(Message("user", "hi")), lambda: shown.append("user"))
    assert shown == ["user"]
    assert [m.content for m in _messages(store.path, sid)] == ["hi"]
    rec.drain()


async def test_a_huge_event_does_not_hold_the_loop_and_shows_in_order(tmp_path: Path) -> None:
    store, sid = _open(tmp_path)
    rec = OrderedRecorder(SessionRecorder(store, sid), asyncio.get_running_loop())
    shown: list[str] = []
    rec.record(MessageAdded(Message("user", "q")), lambda: shown.append("user"))
    started = time.perf_counter()
    rec.record(TextDelta(HUGE), lambda: shown.append("delta"))
    rec.record(MessageAdded(Message("assistant", HUGE)), lambda: shown.append("reply"))
    rec.record(TurnEnded("end_turn"), lambda: shown.append("end"))
    asked: list[str] = []
    rec.after(lambda: asked.append(f"after {len(shown)} shown"))
    returned = time.perf_counter() - started
    # Nothing after the huge event is shown before it is written...
    assert shown == ["user"] and asked == []
    assert returned < 0.05, f"record() held the loop {returned:.3f} s"
    await asyncio.wait_for(rec.settled(), 60)
    # ...then everything, in order, each after its own commit.
    assert shown == ["user", "delta", "reply", "end"]
    assert asked == ["after 4 shown"]
    history = _messages(store.path, sid)
    assert [m.role for m in history] == ["user", "assistant"]
    assert history[1].content == HUGE and not history[1].interrupted
    # Caught up: the next small event is written at once again.
    rec.record(MessageAdded(Message("user", "next")), lambda: shown.append("next"))
    assert shown[-1] == "next"
    rec.drain()


async def test_drain_leaves_everything_on_disk(tmp_path: Path) -> None:
    """Closing (or switching) a session: the writer's queue is written out first."""
    store, sid = _open(tmp_path)
    rec = OrderedRecorder(SessionRecorder(store, sid), asyncio.get_running_loop())
    shown: list[int] = []
    rec.record(TextDelta("x" * BIG_EVENT), lambda: shown.append(1))
    for i in range(50):
        rec.record(TextDelta(f"{i},"), lambda i=i: shown.append(i + 2))
    rec.drain()
    assert shown == list(range(1, 52))
    draft = Store.open(store.path)._draft_text(sid)
    assert draft == "x" * BIG_EVENT + "".join(f"{i}," for i in range(50))
    await asyncio.sleep(0.05)  # the writer's late callbacks change nothing
    assert shown == list(range(1, 52))


async def test_a_failing_writer_reports_once_and_shows_everything(tmp_path: Path) -> None:
    store, sid = _open(tmp_path)
    errors: list[str] = []
    rec = OrderedRecorder(SessionRecorder(store, sid, on_error=errors.append),
                          asyncio.get_running_loop())
    store.path.unlink()  # the writer's own connection cannot open it any more
    for p in store.path.parent.glob("sessions.db-*"):
        p.unlink()
    store.path.mkdir()
    shown: list[str] = []
    rec.record(TextDelta("y" * BIG_EVENT), lambda: shown.append("big"))
    rec.record(TurnEnded("end_turn"), lambda: shown.append("end"))
    await asyncio.wait_for(rec.settled(), 30)
    assert shown == ["big", "end"]
    assert len(errors) == 1 and "no longer being saved" in errors[0]
    rec.drain()

