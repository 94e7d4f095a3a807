"""The chat keeps 60 columns while side panels are open: at 120 columns, the functions panel,
the tool panes and the workbench fold into overlays rather than squeeze it to 34."""

from __future__ import annotations

from pathlib import Path

from tui_helpers import app_for, make_project, send, until, wait_approval, wait_idle

from tuiapp.ui.widgets.transcript import Transcript


async def test_panels_fold_before_the_chat_drops_below_60_columns(tmp_path: Path) -> None:
    app = app_for(make_project(tmp_path / "proj"))
    async with app.run_test(size=(120, 35)) as pilot:
        await send(pilot, "shout notes.txt")
        await wait_approval(pilot)
        await pilot.press("y")
        await wait_idle(pilot)
        transcript = app.query_one(Transcript)
        if app.panes.has_class("-hidden"):
            await pilot.press("ctrl+t")
        await pilot.pause()
        assert transcript.region.width >= 60  # panes alone fit beside the chat
        await pilot.press("ctrl+f")
        await until(pilot, lambda: not app.functions.has_class("-hidden"), what="functions")
        await pilot.pause()
        assert transcript.region.width >= 60
        assert app.open_tool("shout")
        await until(pilot, lambda: app.bench() is not None, what="the workbench")
        await pilot.pause()
        assert transcript.region.width >= 60
        await pilot.press("f3")
        await until(pilot, lambda: app.bench() is None, what="closed")
        await pilot.press("escape")  # to the prompt…
        await pilot.press("ctrl+f")  # … and the functions panel opens again, then closes
        await pilot.press("ctrl+f")
        await pilot.pause(0.2)
        assert not app.screen.has_class("-crowded")  # the panes alone fit: docked again


async def test_the_workbench_is_an_overlay_below_100_columns_with_its_fields(
        tmp_path: Path) -> None:
    app = app_for(make_project(tmp_path / "proj"))
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        assert app.open_tool("shout")
        await until(pilot, lambda: app.bench() is not None
                    and app.bench().query("#bench-form Input"), what="the workbench")
        await pilot.pause()
        bench = app.bench()
        assert bench.region.width >= 78  # over the chat, not beside it
        field = bench.query("#bench-form Input").first()
        field.focus()
        await pilot.pause()
        assert field.region.height > 0 and bench.region.contains_region(field.region)
