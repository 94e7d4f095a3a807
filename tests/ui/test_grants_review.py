"""Issue 25 items 1 and 10: a session grant is kept in memory only; when the session ends,
the TUI lists the grants and keeps as rules only the ones the user ticks (default: none)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from tui_helpers import app_for, make_project, send, wait_approval, wait_idle

from tuiapp.ui.screens.grants_review import GrantsReview
from tuiapp.ui.widgets import approval_keys

KEP_TOML = "[tools]\nbuiltins = false\n"


@pytest.mark.slow
@pytest.mark.parametrize("keep", [False, True])
async def test_session_grants_are_reviewed_at_quit(tmp_path: Path, keep: bool) -> None:
    proj = make_project(tmp_path / "proj")
    app = app_for(proj)
    async with app.run_test(size=(80, 24)) as pilot:
        await send(pilot, "shout notes.txt")
        panel = await wait_approval(pilot)
        await pilot.press("s")
        first = panel.choices()[0]
        assert "notes.txt" in first.label  # the narrowest first
        await pilot.press("1")
        await wait_idle(pilot)
        assert (proj / "kep.toml").read_text() == KEP_TOML  # in memory only
        await send(pilot, "shout notes.txt")
        await wait_idle(pilot)  # the grant covers it: not asked
        assert (proj / "shout.ran").read_text().split() == ["notes.txt", "notes.txt"]
        await send(pilot, "shout other.txt")
        await wait_approval(pilot)  # not covered: asked
        await pilot.pause(approval_keys.GUARD_SECONDS)
        await pilot.press("n", "enter")
        await wait_idle(pilot)
        await pilot.press("ctrl+q")
        await pilot.pause(0.3)
        assert isinstance(app.screen, GrantsReview) and app.is_running
        if keep:
            await pilot.press("space")  # tick the one grant
            await pilot.click("#keep")
        else:
            await pilot.press("escape")
        await pilot.pause(0.3)
    data = tomllib.loads((proj / "kep.toml").read_text())
    rules = data.get("approval", {}).get("rules", [])
    if keep:
        assert len(rules) == 1 and rules[0]["args"] == first.args
        assert "notes.txt" in rules[0]["comment"]
    else:
        assert rules == []
