"""A question that waits (issue 25 item 9): after [ui] notify_after seconds, with the terminal
unfocused or the user idle, kep rings the bell and sends OSC 9 / 777 or notify-send; never
when the question was answered, never twice, never with raw control characters."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from textual import events
from tui_helpers import app_for, make_project, send, until, wait_approval, wait_idle

from tuiapp.ui.waiting_notice import desktop_route, sequence

SETTINGS = '[tools]\nbuiltins = false\n\n[ui]\nnotify_after = 0.3\nnotify_desktop = "osc9"\n'


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_an_unfocused_terminal_gets_the_bell_and_osc_once(tmp_path: Path,
                                                                size: tuple[int, int]) -> None:
    proj = make_project(tmp_path / "proj")
    (proj / "kep.toml").write_text(SETTINGS)
    app = app_for(proj)
    async with app.run_test(size=size) as pilot:
        app.post_message(events.AppBlur())
        await send(pilot, "shout notes.txt")
        await wait_approval(pilot)
        await until(pilot, lambda: getattr(app, "nudges", []), what="the nudge")
        assert app.nudges == ["bell", "osc9"]
        await asyncio.sleep(0.5)  # a later look finds no second nudge for this question
        await pilot.pause()
        assert app.nudges == ["bell", "osc9"]


async def test_no_nudge_when_answered_or_when_the_user_is_busy(tmp_path: Path) -> None:
    proj = make_project(tmp_path / "proj")
    (proj / "kep.toml").write_text(SETTINGS.replace("0.3", "100"))  # we fire it ourselves
    app = app_for(proj)
    async with app.run_test(size=(80, 24)) as pilot:
        await send(pilot, "shout notes.txt")
        panel = await wait_approval(pilot)
        call = panel.current.call
        app._last_input = time.monotonic()  # focused, and a key was just pressed
        app._nudge(call.id, call.name)
        assert getattr(app, "nudges", []) == []
        app._last_input = time.monotonic() - 200  # focused but idle: nudged
        app._nudge(call.id, call.name)
        assert app.nudges == ["bell", "osc9"]
        await pilot.press("y")
        await wait_idle(pilot)
        app._nudge(call.id, call.name)  # answered: nothing more
        assert app.nudges == ["bell", "osc9"]


def test_routes_follow_the_terminal_and_the_setting() -> None:
    assert desktop_route("auto", {"TERM_PROGRAM": "iTerm.app"}) == "osc9"
    assert desktop_route("auto", {"VTE_VERSION": "7000"}) == "osc777"
    assert desktop_route("auto", {"TERM_PROGRAM": "iTerm.app", "TMUX": "x"}) in (
        "notify-send", "off")  # a multiplexer swallows OSC
    assert desktop_route("off", {"TERM_PROGRAM": "iTerm.app"}) == "off"
    assert desktop_route("auto", {}) in ("notify-send", "off")


@pytest.mark.parametrize("route", ["osc9", "osc777"])
def test_a_hostile_tool_name_cannot_end_the_sequence_early(route: str) -> None:
    from tuiapp.security.display import printable_line

    text = printable_line("kep: x\x07\x1b]0;owned\x1b\\ waits")
    seq = sequence(route, text)
    assert seq.count("\x07") == 1 and seq.endswith("\x07") and seq.count("\x1b") == 1
