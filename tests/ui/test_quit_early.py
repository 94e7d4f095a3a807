"""Quitting in the first moments, or while a session is being opened, ends kep quietly: the
work still under way (the panels mounted after the first frame, the resumed history) meets a
screen that is being taken down, and that is never an error or a traceback on the way out."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tui_helpers import app_for, make_project, wait_idle

from tuiapp.conversation.store import Store
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
