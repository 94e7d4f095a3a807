"""Compaction on screen: the palette's "Compact conversation" puts a "compacted" marker below
the dimmed conversation it summarised, the next message goes on from the summary, and the
store keeps the originals; also at 80x24."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import SIZE, app_for, make_project, send, until, wait_idle

from tuiapp.conversation.store import Store
from tuiapp.ui.commands import kep_commands
from tuiapp.ui.widgets.compacted import CompactedMarker
from tuiapp.ui.widgets.transcript import Transcript, UserMessage


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


@pytest.mark.parametrize("size", [SIZE, (80, 24)])
async def test_compact_from_the_palette(proj: Path, size: tuple[int, int]) -> None:
    store = Store.open()
    app = app_for(proj, store=store)
    async with app.run_test(size=size) as pilot:
        assert "Compact conversation" in [c.title for c in kep_commands(app)]
        app.action_compact()
        await pilot.pause()
        assert not app.query(CompactedMarker)  # nothing yet: one line says so
        await send(pilot, "first question \x1b[2J")
        await wait_idle(pilot)
        await send(pilot, "second question")
        await wait_idle(pilot)
        app.action_compact()
        await until(pilot, lambda: bool(app.query(CompactedMarker)), what="the marker")
        await wait_idle(pilot)
        marker = app.query_one(CompactedMarker)
        assert "first question" in marker.summary and "\x1b" not in marker.summary
        users = list(app.query_one(Transcript).query(UserMessage))
        assert users and all(u.has_class("-compacted") for u in users)
        assert app.chat.history[0].summary_keeps is not None
        await send(pilot, "third question")
        await wait_idle(pilot)
        assert not app.query_one(Transcript).query(UserMessage).last().has_class("-compacted")
        sid = app.chat.session_id
        assert sid is not None
        stored = [m.content for m in store.load_messages(sid, for_resume=False)]
        assert "second question" in stored and "third question" in stored
        resumed = store.load_messages(sid)
        assert resumed[0].summary_keeps is not None and "first question" not in [
            m.content for m in resumed]
    store.close()


async def test_a_resumed_compacted_session_shows_the_originals_dimmed_above_the_marker(
        proj: Path) -> None:
    from tuiapp.conversation.conversation import Conversation, allow_all
    from tuiapp.providers.offline import OfflineProvider
    from tuiapp.settings.config_types import ApprovalConfig, ProviderConfig

    store = Store.open()
    sid = store.create_session(proj, "offline")
    conv = Conversation(OfflineProvider(ProviderConfig("offline", "offline"), ""), dict,
                        ApprovalConfig, allow_all, None,  # type: ignore[arg-type]
                        lambda e: store.record(sid, e))
    for text in ("first question", "second question"):
        await conv.turn(text)
    assert await conv.compact()
    app = app_for(proj, store=store, session_id=sid, history=store.load_messages(sid))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: bool(app.query(CompactedMarker)), what="the marker")
        transcript = app.query_one(Transcript)
        order = [w for w in transcript.children
                 if isinstance(w, (UserMessage, CompactedMarker))]
        kinds = [type(w).__name__ if isinstance(w, CompactedMarker) else str(w.render())
                 for w in order]
        assert kinds == ["first question", "CompactedMarker", "second question"]
        assert order[0].has_class("-compacted") and not order[2].has_class("-compacted")
        assert app.chat.history[0].summary_keeps is not None  # the model sees the summary
    store.close()
