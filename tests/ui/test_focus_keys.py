"""Focus never swallows a key: after every focus change a whole word is typed, and every
letter of it arrives where the footer said the next key would go."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, OptionList
from tui_helpers import (
    SIZE,
    ScriptedProvider,
    app_for,
    make_project,
    send,
    until,
    wait_approval,
    wait_idle,
)

from tuiapp.providers.base import StreamEnd
from tuiapp.ui import chat_screen
from tuiapp.ui.widgets.functions_panel import FunctionsPanel
from tuiapp.ui.widgets.output_log import OutputLog
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.ui.widgets.status_footer import StatusFooter
from tuiapp.ui.widgets.tool_panes import ToolPanes
from tuiapp.vocab.events import TextDelta
from tuiapp.vocab.messages import ToolCall


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


def footer(app: object) -> StatusFooter:
    return app.query_one(StatusFooter)  # type: ignore[attr-defined]


def footer_text(app: object) -> str:
    return str(footer(app).render())


async def test_ctrl_f_focuses_the_filter_and_slash_word_filters(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        await pilot.press("ctrl+f", *"/slee")
        panel = app.query_one(FunctionsPanel)
        box = panel.query_one("#functions-filter", Input)
        assert box.has_focus and box.value == "slee"  # `/` started the filter, no literal /
        assert app.query_one(PromptInput).text == ""  # nothing for the model
        assert "functions filter" in footer_text(app)
        listing = panel.query_one(OptionList)
        assert [o.id for o in listing._options if o.id and o.id.startswith("tool:")] == [
            f"tool:sleepy:{proj / 'prompts' / 'functions' / 'sleepy'}"]
        # Down into the list, then `/` there starts the filter again, and a word goes in.
        await pilot.press("enter")
        assert listing.has_focus and "functions" in footer_text(app)
        await pilot.press("/")
        assert box.has_focus
        await pilot.press("ctrl+u", *"shout")
        assert box.value == "shout"
        # Ctrl+F with the keyboard in the panel closes it; typing goes to the message box.
        await pilot.press("ctrl+f", *"hello")
        assert panel.has_class("-hidden") and app.query_one(PromptInput).text == "hello"
        assert "message box" in footer_text(app)


async def test_a_word_typed_on_a_tool_pane_reaches_the_prompt_whole(
        proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # "Right after" made long: a loaded machine must not turn typing into a pane's key.
    monkeypatch.setattr(chat_screen, "GUARD_SECONDS", 60.0)
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "shout notes.txt")
        await wait_approval(pilot)
        await pilot.press("y")
        await wait_idle(pilot)
        panes = app.query_one(ToolPanes)
        panes.remove_class("-hidden")
        await until(pilot, lambda: panes.query(OutputLog), what="the pane")
        for word in ("slow", "cool", "oc"):  # the pane's own keys are c and o
            prompt = app.query_one(PromptInput)
            prompt.clear()
            panes.query(OutputLog).last().focus()
            await pilot.pause()
            assert "tool panes" in footer_text(app)
            await pilot.press(*word)  # right after the focus change: all of it is typing
            assert prompt.text == word and prompt.has_focus
            assert not app.screen_stack[1:]  # `o` opened no viewer
        # Once it has had the keyboard a while, a pane's own key keeps its meaning.
        monkeypatch.setattr(chat_screen, "GUARD_SECONDS", 0.0)
        panes.query(OutputLog).last().focus()
        await pilot.pause()
        await pilot.press("o")
        await until(pilot, lambda: app.screen_stack[1:], what="the output viewer")


async def test_ctrl_t_gives_the_panes_the_keyboard_and_typing_still_arrives(
        proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chat_screen, "GUARD_SECONDS", 60.0)
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "shout notes.txt")
        await wait_approval(pilot)
        await pilot.press("y")
        await wait_idle(pilot)
        panes = app.query_one(ToolPanes)
        if not panes.has_class("-hidden"):
            await pilot.press("ctrl+t")
        await pilot.press("ctrl+t", *"oops")
        assert app.query_one(PromptInput).text == "oops"
        assert not app.screen_stack[1:]


async def test_the_workbench_keys_work_wherever_the_keyboard_is(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        assert app.open_tool("shout")
        # The form's fields are composed a frame after the form itself.
        await until(pilot, lambda: app.bench() is not None
                    and app.bench().query("#bench-form Input"), what="the workbench's fields")
        bench = app.bench()
        field = bench.query_one("#bench-form Input", Input)
        field.focus()
        await pilot.press(*"notes.txt")
        assert field.value == "notes.txt"
        prompt = app.query_one(PromptInput)
        prompt.focus()
        await pilot.pause()
        await pilot.press("f5")  # the keyboard is in the message box, not the workbench
        await until(pilot, lambda: len(bench.runs) == 1 and not bench.running, what="the run")
        assert bench.runs[0].arguments == {"path": "notes.txt"}
        await pilot.press(*"word", "f3")
        await until(pilot, lambda: app.bench() is None, what="closed")
        assert prompt.text == "word"
        await pilot.press("f3", "f5")  # no workbench: the keys do nothing, and nothing breaks
        assert prompt.text == "word"


async def test_typing_on_a_waiting_call_never_answers_it(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "shout notes.txt")
        panel = await wait_approval(pilot)
        assert panel.has_focus and "approval" in footer_text(app)
        await pilot.press(*"hey")  # h is not an answer: typing; so are e and y after it
        prompt = app.query_one(PromptInput)
        assert prompt.text == "hey" and panel.waiting
        assert not (proj / "shout.ran").exists()


def three_calls() -> ScriptedProvider:
    calls = [ToolCall(f"c{i}", "shout", {"path": p})
             for i, p in enumerate(("notes.txt", "other.txt", "notes.txt"))]
    return ScriptedProvider([[*calls, StreamEnd("tool_use")],
                             [TextDelta("done"), StreamEnd("end_turn")]])


@pytest.mark.slow
async def test_the_footer_keeps_saying_a_call_waits_from_the_second_on(proj: Path) -> None:
    app = app_for(proj, provider=three_calls())
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "shout")
        for _ in range(3):
            panel = await wait_approval(pilot)
            shown = panel.current
            assert footer(app).state == "approval"
            assert "answering" not in footer_text(app) and "y allow" in footer_text(app)
            # The keyboard moves to the message box: the footer says Esc goes to the call.
            app.query_one(PromptInput).focus()
            await pilot.pause()
            text = footer_text(app)
            assert "esc answer the call" in text and "message box" in text
            await pilot.press("escape")
            assert panel.has_focus_within and "y allow" in footer_text(app)
            await pilot.pause(0.6)
            await pilot.press("y")
            await until(pilot, lambda s=shown, p=panel: p.current is not s, what="next call")
        await wait_idle(pilot)
