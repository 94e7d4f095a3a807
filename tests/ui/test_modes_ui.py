"""Approval modes in the TUI: ctrl+s cycles (never into yolo), the palette picks any mode,
the footer shows it (yolo: the whole line red), and the next call is decided in it. Also at
80x24 and with focus away from the message box."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import SIZE, app_for, make_project, send, tool_messages, until, wait_idle

from tuiapp.ui.widgets.status_footer import StatusFooter


@pytest.mark.parametrize("size", [SIZE, (80, 24)])
async def test_ctrl_s_cycles_and_read_only_denies_a_project_tool(tmp_path: Path,
                                                                 size: tuple[int, int]) -> None:
    proj = make_project(tmp_path / "proj")
    app = app_for(proj)
    async with app.run_test(size=size) as pilot:
        footer = app.query_one(StatusFooter)
        assert footer.mode == "ask" and "read-only" not in str(footer.render())
        await pilot.press("ctrl+s")
        assert app.ws.mode == "auto" and footer.mode == "auto"
        await pilot.press("ctrl+s")
        assert app.ws.mode == "read-only"
        await pilot.pause()
        assert "read-only" in str(footer.render())  # fits beside the model at 80 columns
        await send(pilot, "shout notes.txt")
        await wait_idle(pilot)
        assert not (proj / "shout.ran").exists()
        result = tool_messages(app)[0]
        assert result.is_error and "read-only mode" in result.content
        assert not app.approval.display  # denied, not asked
        for _ in range(5):  # the key never reaches yolo
            await pilot.press("ctrl+s")
            assert app.ws.mode != "yolo"


async def test_yolo_from_the_palette_runs_unasked_and_paints_the_footer(tmp_path: Path) -> None:
    proj = make_project(tmp_path / "proj")
    app = app_for(proj)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        await pilot.press("ctrl+p")
        await pilot.pause()
        for key in "Approval mode":
            await pilot.press(key if key != " " else "space")
        await pilot.press("enter")
        await pilot.pause()
        for key in "yolo":
            await pilot.press(key)
        await pilot.press("enter")
        await until(pilot, lambda: app.ws.mode == "yolo", what="yolo")
        footer = app.query_one(StatusFooter)
        assert footer.has_class("-yolo") and "YOLO" in str(footer.render())
        await send(pilot, "shout notes.txt")
        await wait_idle(pilot)
        assert (proj / "shout.ran").exists()
        assert not app.approval.display
        # A config reload keeps the session's mode.
        from tuiapp.project import config as project_config

        app.ws.reconfigure(project_config.load(proj))
        assert app.ws.mode == "yolo"
        app.set_mode("ask")
        await pilot.pause()
        assert not footer.has_class("-yolo")


async def test_the_key_works_with_focus_away_from_the_prompt(tmp_path: Path) -> None:
    proj = make_project(tmp_path / "proj")
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        app.set_focus(None)
        await pilot.press("ctrl+s")
        assert app.ws.mode == "auto"
