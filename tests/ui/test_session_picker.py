"""The session picker (ctrl+o): open, filter, rename and delete (twice to confirm)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import SIZE, app_for, make_project, send, until, wait_idle

from tuiapp.conversation.store import Store
from tuiapp.ui.screens.session_picker import SessionPicker
from tuiapp.ui.widgets.transcript import UserMessage
from tuiapp.vocab.events import MessageAdded
from tuiapp.vocab.messages import Message


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


def saved(store: Store, root: Path, text: str) -> str:
    sid = store.create_session(root, "offline")
    store.record(sid, MessageAdded(Message("user", text)))
    return sid


async def test_open_rename_and_delete_from_the_picker(proj: Path) -> None:
    store = Store.open()
    alpha = saved(store, proj, "alpha task")
    beta = saved(store, proj, "beta \x1b]2;pwned\x07 task")  # a hostile title stays text
    noise = [saved(store, proj, f"noise {i}") for i in range(60)]
    app = app_for(proj, store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker), what="the picker")
        picker = app.screen
        await pilot.press(*"alpha")
        await pilot.pause()
        options = picker.query_one("OptionList")
        assert options.option_count == 1
        await pilot.press("ctrl+r")  # rename it
        box = picker.query_one("Input")
        assert box.value == "alpha task"  # starts from the old title
        box.value = "Renamed\tone"
        await pilot.press("enter")
        await pilot.pause()
        assert store.session_info(alpha).title == "Renamed one"
        await pilot.press(*"beta")
        await pilot.pause()
        await pilot.press("ctrl+d")  # armed, nothing deleted yet
        await pilot.pause()
        assert store.session_info(beta).id == beta
        await pilot.press("ctrl+d")
        await pilot.pause()
        assert beta not in {s.id for s in store.list_sessions(proj, limit=100)}
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, SessionPicker), what="close")

        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker), what="the picker")
        await pilot.press(*alpha[:4])
        await pilot.pause()
        await pilot.press("enter")
        await until(pilot, lambda: app.chat.session_id == alpha, what="the session to open")
        await wait_idle(pilot)
        assert [str(u.render()) for u in app.query(UserMessage)] == ["alpha task"]
    assert len(noise) == 60
    store.close()


async def test_the_open_session_cannot_be_deleted_from_under_itself(proj: Path) -> None:
    store = Store.open()
    app = app_for(proj, store=store)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "hello")
        await wait_idle(pilot)
        current = app.chat.session_id
        assert current is not None
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker), what="the picker")
        await pilot.press("ctrl+d", "ctrl+d")
        await pilot.pause()
        assert store.session_info(current).id == current
        assert any("open now" in str(n.message) for n in app._notifications)
    store.close()


async def test_a_resumed_session_gets_its_tool_panes_back(proj: Path) -> None:
    from tui_helpers import wait_approval

    from tuiapp.ui.widgets.output_log import OutputLog

    store = Store.open()
    first = app_for(proj, store=store)
    async with first.run_test(size=SIZE) as pilot:
        await send(pilot, "shout notes.txt")
        await wait_approval(pilot)
        await pilot.press("y")
        await wait_idle(pilot)
        sid = first.chat.session_id
        live = "\n".join(first.panes.query(OutputLog).last().lines())
    assert sid is not None and "HELLO" in live.upper()
    again = app_for(proj, store=store, session_id=sid, history=store.load_messages(sid))
    async with again.run_test(size=SIZE) as pilot:
        panes = again.panes
        await until(pilot, lambda: panes.is_mounted and panes.query(OutputLog),
                    what="a restored pane")
        restored = "\n".join(panes.query(OutputLog).last().lines())
        assert restored.strip() == live.strip()  # the same output, without kep's footer
        assert "[kep:" not in restored
    store.close()


HOLDER = """
import sys, time
from tuiapp.conversation.session_lock import acquire
from tuiapp.conversation.store import Store
store = Store.open(sys.argv[1])
acquire(store, sys.argv[2])
print("held", flush=True)
time.sleep(120)
"""


async def test_opening_a_session_another_live_kep_holds_is_refused(proj: Path) -> None:
    """ctrl+o to a session another kep is writing: one line naming that kep's pid, nothing
    written into it, and the chat open now goes on as before."""
    import subprocess
    import sys

    store = Store.open()
    other = saved(store, proj, "theirs")
    before = store.load_messages(other)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(store.path), other],
                              stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[2])
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        app = app_for(proj, store=store)
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "mine")
            await wait_idle(pilot)
            mine = app.chat.session_id
            assert mine is not None and mine != other
            await pilot.press("ctrl+o")
            await until(pilot, lambda: isinstance(app.screen, SessionPicker), what="picker")
            await pilot.press(*other[:6])
            await pilot.pause()
            await pilot.press("enter")
            await until(pilot, lambda: any("another kep" in str(n.message)
                                           for n in app._notifications), what="the refusal")
            (note,) = [n for n in app._notifications if "another kep" in str(n.message)]
            assert f"session {other} is open in another kep (pid {holder.pid})" in note.message
            assert "\n" not in note.message and note.severity == "error"
            assert app.chat.session_id == mine  # still here, still usable
            assert [str(u.render()) for u in app.query(UserMessage)] == ["mine"]
            await send(pilot, "still here")
            await wait_idle(pilot)
            assert [str(u.render()) for u in app.query(UserMessage)] == ["mine", "still here"]
        assert store.load_messages(other) == before  # never written by this kep
        assert [m.content for m in store.load_messages(mine) if m.role == "user"] == [
            "mine", "still here"]
    finally:
        holder.kill()
        holder.wait()
    store.close()
