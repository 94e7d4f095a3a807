"""The footer while a call waits for an answer, at the widths people use: the state, who gets
the next key and the keys each read as their own part, never run together."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import app_for, make_project, send, wait_approval

from tuiapp.conversation.store import Store
from tuiapp.ui.widgets.status_footer import StatusFooter


@pytest.mark.parametrize("width", [80, 100, 110, 120, 140, 200])
async def test_the_approval_footer_reads_cleanly(tmp_path: Path, width: int) -> None:
    proj = make_project(tmp_path / "proj")
    store = Store.open()
    app = app_for(proj, store=store)
    async with app.run_test(size=(width, 30)) as pilot:
        await send(pilot, "shout hello")
        await wait_approval(pilot)
        await pilot.pause()
        footer = app.query_one(StatusFooter)
        text = str(footer.render())
        assert len(text) <= width
        state = "waiting for you"
        assert state in text
        after = text.split(state, 1)[1]
        # What follows the state is set apart: a separator, or a clear gap.
        assert after.startswith((" │ ", "  │  ")) or after.startswith("   "), repr(text)
        assert "y allow" in text and "n deny" in text
    store.close()
