"""Prompts and agents in the TUI: the palette lists them, the variables form asks for what is
missing, the footer shows the active one, an agent's starters are one-key suggestions, and a
prompt's statements run (its `.print` shows in the transcript)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input
from tui_helpers import SIZE, app_for, make_project, until, wait_approval, wait_idle

from tuiapp.project.session_start import prepare
from tuiapp.ui.app import KepApp
from tuiapp.ui.prompt_commands import PrintedText, StartCommands
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.ui.widgets.starters import Starters
from tuiapp.ui.widgets.status_footer import StatusFooter
from tuiapp.ui.widgets.transcript import UserMessage
from tuiapp.ui.widgets.variables_form import VariablesForm

AGENTS = Path(__file__).resolve().parent.parent / "fixtures" / "agents"


def project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "proj")
    shutil.copytree(AGENTS / "helper", root / "agents" / "helper")
    shutil.copytree(AGENTS / "shared_tools", root / "tools")
    (root / "prompts" / "loud.prompt").write_text(
        '.prompt {"name": "loud", "params": {"file": "notes.txt"}}\n.functions shout\n'
        ".user shout <<file>>\n.exec\n.print <<who>> got it\n")
    return root


async def fill_form(pilot: Pilot[Any], values: dict[str, str]) -> None:
    app = pilot.app
    await until(pilot, lambda: isinstance(app.screen, VariablesForm)
                and bool(app.screen.query(Input)), what="the form")
    form = app.screen
    for i, f in enumerate(form.fields):
        if f.name in values:
            form.query_one(f"#var-{i}", Input).value = values[f.name]
    form.submit()


async def test_palette_lists_prompts_and_agents(tmp_path: Path) -> None:
    app = app_for(project(tmp_path))
    async with app.run_test(size=SIZE):
        provider = StartCommands(app.screen)
        titles = [hit.display async for hit in provider.discover()]
    assert titles == ["Prompt: loud", "Agent: helper"]


async def test_agent_form_footer_and_one_key_starter(tmp_path: Path) -> None:
    app = app_for(project(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        app.begin_start("agent", "helper")
        await fill_form(pilot, {"lang": "French"})
        await until(pilot, lambda: app.query(Starters), what="the starters")
        assert app.query_one(StatusFooter).label == "agent: helper"
        assert app.query_one(Starters).starters == ["show_vars", "What can you do?"]
        prompt = app.query_one(PromptInput)
        prompt.focus()
        await pilot.press("1")  # one key on the empty prompt sends the first starter
        panel = await wait_approval(pilot)
        assert [str(u.render()) for u in app.query(UserMessage)][-1].endswith("show_vars")
        assert not app.query(Starters) and prompt.text == ""
        panel.focus()
        await pilot.press("y")
        await wait_idle(pilot)
    result = [m.content for m in app.chat.history if m.role == "tool"]
    assert result == ["lang=French greeting=hello agent=helper"]  # LLM_AGENT_VAR_* reached it


async def test_cli_prompt_asks_for_missing_values_then_runs(tmp_path: Path) -> None:
    app = app_for(project(tmp_path))
    assert isinstance(app, KepApp)
    app.pending_start = prepare(app.ws, prompt="loud")  # what `kep --prompt loud` hands over
    async with app.run_test(size=SIZE) as pilot:
        await fill_form(pilot, {"who": "Ann"})
        panel = await wait_approval(pilot)  # shout is the project's own tool: it asks
        assert app.query_one(StatusFooter).label == "prompt: loud"
        panel.focus()
        await pilot.press("y")
        await until(pilot, lambda: app.query(PrintedText), what=".print output")
        await wait_idle(pilot)
        printed = app.query_one(PrintedText)
    assert printed.source == "Ann got it"
    assert [m.content for m in app.chat.history if m.role == "tool"] == ["HELLO FROM NOTES"]
