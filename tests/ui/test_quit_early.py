"""Quitting in the first moments, or while a session is being opened, ends kep quietly: the
work still under way (the panels mounted after the first frame, the resumed history) meets a
screen that is being taken down, and that is never an error or a traceback on the way out."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.widget import MountError
from textual.worker import WorkerFailed
from tui_helpers import app_for, make_project, wait_idle

from tuiapp.conversation.store import Store
from tuiapp.ui.app import KepApp
from tuiapp.vocab.events import MessageAdded
from tuiapp.vocab.messages import Message

# From the first frame to well after the panels are in (about 0.1-0.3 s here, on a loaded
# machine later): each moment quits into a different step of the start.
MOMENTS = [0, 0.03, 0.06, 0.1, 0.15, 0.2, 0.3, 0.5]


async def test_ctrl_q_at_every_moment_of_the_start_is_quiet(tmp_path: Path) -> None:
    for i, delay in enumerate(MOMENTS):
        app = app_for(make_project(tmp_path / f"p{i}"))
        async with app.run_test(size=(80, 24)) as pilot:  # raises what the app raised
            await asyncio.sleep(delay)
            await pilot.press("ctrl+q")
        assert app.return_code == 0, f"quit after {delay} s: {app.return_code}"


@pytest.mark.parametrize("delay", [0, 0.02, 0.1])
async def test_ctrl_q_while_a_long_session_opens_is_quiet(tmp_path: Path, delay: float) -> None:
    root = make_project(tmp_path / "p")
    store = Store.open()
    sid = store.create_session(root, "offline")
    for n in range(1, 301):
        store.record(sid, MessageAdded(Message("user" if n % 2 else "assistant",
                                               f"message {n} " + "word " * 30)))
    app = app_for(root, store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_idle(pilot)
        app.resume(sid)
        await asyncio.sleep(delay)
        await pilot.press("ctrl+q")
    assert app.return_code == 0


@pytest.mark.parametrize("error", ["mount", "query"])
@pytest.mark.parametrize("how", ["timer", "after refresh", "worker"])
async def test_work_that_meets_a_screen_being_taken_down_ends_quietly(
        tmp_path: Path, how: str, error: str) -> None:
    """The class, for every kind of deferred work: once the user has quit, work under way that
    meets widgets being taken down (a mount into one, a query that finds nothing) ends there;
    while kep runs, the same error is an error."""
    from textual.css.query import NoMatches
    from textual.widgets import Static

    for quit_first in (True, False):
        app = app_for(make_project(tmp_path / f"p-{how}-{error}-{quit_first}"))

        def work(app: KepApp = app, quit_first: bool = quit_first) -> None:
            if quit_first:
                app.exit()  # ctrl+q came while this was under way
            if error == "mount":
                Static().mount(Static())  # a widget no longer attached: MountError
            raise NoMatches("#gone")

        async def async_work() -> None:
            work()

        try:
            async with app.run_test(size=(80, 24)) as pilot:
                await wait_idle(pilot)
                if how == "timer":
                    app.set_timer(0.01, work)
                elif how == "after refresh":
                    app.call_after_refresh(work)
                else:
                    app.run_worker(async_work)
                await asyncio.sleep(0.1)
                await pilot.pause()
        except (MountError, NoMatches, WorkerFailed):
            assert not quit_first, f"{how}: an error on the way out"
        else:
            assert quit_first, f"{how}: the error was hidden while kep was running"
            assert app.return_code == 0
