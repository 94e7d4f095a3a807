"""The help screen: F1 or `/help` opens kep's topic pages, rendered; typing searches every
page; a link to another topic opens it in place; Esc gives the prompt its keyboard back."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, OptionList
from tui_helpers import SIZE, app_for, make_project, send, until

from tuiapp.ui.screens.help import HelpScreen, TopicViewer
from tuiapp.ui.widgets.prompt_input import PromptInput


async def test_f1_search_a_link_and_back(tmp_path: Path) -> None:
    app = app_for(make_project(tmp_path / "proj"))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f1", *"approval rules")  # typed right away: into the search box
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        screen = app.screen
        box = screen.query_one("#help-search", Input)
        await until(pilot, lambda: box.value == "approval rules", what="the search")
        topics = screen.query_one("#help-topics", OptionList)
        found = [topics.get_option_at_index(i).id for i in range(topics.option_count)]
        assert "approval" in found and "themes" not in found
        await pilot.press("enter")
        await until(pilot, lambda: screen.topic == found[0], what="the page")
        # A link to another topic opens it in place.
        viewer = screen.query_one(TopicViewer)
        await screen.show("security")
        viewer.document.post_message(viewer.document.LinkClicked(
            viewer.document, "trust.md#folder-trust"))
        await until(pilot, lambda: screen.topic == "trust", what="the linked topic")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen), what="closed")
        prompt = app.query_one(PromptInput)
        await pilot.press(*"ok")
        assert prompt.text == "ok" and prompt.has_focus


async def test_slash_help_opens_it_and_is_not_sent(tmp_path: Path) -> None:
    app = app_for(make_project(tmp_path / "proj"))
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "/help")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        assert not app.chat.history  # nothing went to the model
