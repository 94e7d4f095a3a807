"""Focus is visible and typing is never lost: printable keys on a widget that can't use them
go to the prompt, closing an overlay gives the prompt the keyboard back, and a focused pane
or transcript shows a border."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import SIZE, app_for, make_project, send, until, wait_approval, wait_idle

from tuiapp.ui.screens.output_viewer import OutputViewer
from tuiapp.ui.widgets.output_log import OutputLog
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.ui.widgets.tool_panes import ToolPanes
from tuiapp.ui.widgets.transcript import Transcript


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


async def test_typing_on_the_transcript_goes_to_the_prompt(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        app.query_one(Transcript).focus()
        await pilot.pause()
        assert app.query_one(Transcript).styles.outline.top[0] != ""  # focus is visible
        await pilot.press("h", "i", "space", "t", "a", "b")
        prompt = app.query_one(PromptInput)
        assert prompt.has_focus and prompt.text == "hi tab"


@pytest.mark.slow
async def test_closing_the_output_viewer_gives_the_prompt_the_keyboard(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "shout notes.txt")
        await wait_approval(pilot)
        await pilot.press("y")
        await wait_idle(pilot)
        panes = app.query_one(ToolPanes)
        if panes.has_class("-hidden"):
            await pilot.press("ctrl+t")
        await until(pilot, lambda: panes.query(OutputLog), what="the pane")
        panes.query(OutputLog).last().focus()
        await pilot.pause()
        assert panes.has_focus_within and panes.styles.outline.top[0] != ""
        await pilot.pause(0.6)  # (a letter right after a focus change is typing: ui/focus.py)
        await pilot.press("o")  # a pane's own key keeps its meaning
        await until(pilot, lambda: isinstance(app.screen, OutputViewer), what="the viewer")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, OutputViewer), what="close")
        await pilot.pause()
        prompt = app.query_one(PromptInput)
        assert prompt.has_focus
        await pilot.press("o", "k")
        assert prompt.text == "ok"  # nothing vanished


async def test_a_key_the_focused_widget_binds_is_not_taken(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "shout notes.txt")
        panel = await wait_approval(pilot)
        panel.focus()
        await pilot.pause(0.6)
        await pilot.press("q")  # not an approval key: to the prompt, answers nothing
        prompt = app.query_one(PromptInput)
        assert prompt.text == "q" and panel.display


def test_sizes_and_counts_read_as_words() -> None:
    from tuiapp.ui.screens.output_viewer import _mb

    assert (_mb(0), _mb(1), _mb(700), _mb(4096)) == ("0 bytes", "1 byte", "700 bytes", "4 KB")


async def test_a_pending_call_has_a_space_between_its_icon_and_name(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=(80, 24)) as pilot:
        await send(pilot, "shout notes.txt")
        await wait_approval(pilot)
        block = app.query_one(".tool-block")
        icon = block.query_one(".tool-icon")
        assert icon.size.width >= 3  # ⌛ takes two cells, then a space


async def test_screenshot_says_where_it_went_or_why_not(proj: Path, tmp_path: Path) -> None:
    from tuiapp.settings import paths

    app = app_for(proj)
    async with app.run_test(size=(80, 24)) as pilot:
        app.action_screenshot()  # no ~/Downloads here: kep's data folder instead
        await pilot.pause()
        shots = list((paths.data_dir() / "screenshots").glob("*.svg"))
        assert len(shots) == 1 and "<svg" in shots[0].read_text()[:2000]
        assert any(str(shots[0]) in str(n.message) for n in app._notifications)
        blocker = tmp_path / "not-a-dir"
        blocker.write_text("")
        app.action_screenshot(path=str(blocker))
        await pilot.pause()
        assert any("Screenshot not saved" in str(n.message) for n in app._notifications)


async def test_the_palette_screenshot_entry_falls_back_without_downloads(proj: Path) -> None:
    """Textual's palette entry calls deliver_screenshot directly: the fallback must be there."""
    from textual.app import SystemCommand

    from tuiapp.settings import paths

    app = app_for(proj)
    async with app.run_test(size=(80, 24)) as pilot:
        entries = {c.title: c for c in app.get_system_commands(app.screen)
                   if isinstance(c, SystemCommand)}
        entries["Screenshot"].callback()
        folder = paths.data_dir() / "screenshots"
        await until(pilot, lambda: list(folder.glob("*.svg")), what="the screenshot")
        (shot,) = folder.glob("*.svg")
        await until(pilot, lambda: any(str(shot) in str(n.message)
                                       for n in app._notifications), what="the toast")
        assert not any("Failed" in str(n.message) for n in app._notifications)


async def test_copy_last_reply_as_markdown_with_a_toast(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+l")
        await pilot.pause()
        assert any("Nothing to copy" in str(n.message) for n in app._notifications)
        await send(pilot, "shout notes.txt")
        await wait_approval(pilot)
        await pilot.press("y")
        await wait_idle(pilot)
        await pilot.press("ctrl+l")
        await pilot.pause()
        copied = app.clipboard
        assert "**shout** finished ok" in copied and "```" in copied  # Markdown, not rendered
        assert any("Copied" in str(n.message) for n in app._notifications)
