"""What a tool call says about who decided: in words, not regexes."""

from __future__ import annotations

from pathlib import Path

from tui_helpers import app_for, make_project, send, until, wait_approval, wait_idle


async def test_tool_blocks_say_who_decided_in_words(tmp_path: Path) -> None:
    proj = make_project(tmp_path / "proj")
    (proj / "kep.toml").write_text("")  # kep's built-ins on, beside the project's tools
    app = app_for(proj)
    async with app.run_test(size=(80, 24)) as pilot:
        await send(pilot, "shout notes.txt")
        await wait_approval(pilot)
        block = app.query(".tool-block").last()
        detail = str(block.query_one(".tool-detail").render())
        assert detail == "asked: no rule matched"
        await pilot.press("y")
        await wait_idle(pilot)
        await send(pilot, "readfile notes.txt")
        await wait_idle(pilot)
        await until(pilot, lambda: len(app.query(".tool-block")) == 2, what="the second call")
        detail = str(app.query(".tool-block").last().query_one(".tool-detail").render())
        assert detail == "allowed: kep's read-only built-ins"
        assert "~" not in detail and "→" not in detail
