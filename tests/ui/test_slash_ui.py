"""Slash commands in the prompt: the completion list as you type `/`, built-ins run the app's
own actions, user commands from `.prompt` files, `//` sends a literal `/`, an unknown command
is one line and never reaches the model; hostile names and 200 commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.command import CommandPalette
from textual.pilot import Pilot
from tui_helpers import SIZE, ScriptedProvider, app_for, make_project, send, until, wait_idle

from tuiapp.providers.base import StreamEnd
from tuiapp.ui.app import KepApp
from tuiapp.ui.slash.builtins import BUILTINS
from tuiapp.ui.slash.menu import SlashMenu
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.vocab.events import TextDelta

SIZES = [SIZE, (80, 24)]
REQUIRED = {"model", "mode", "compact", "clear", "sessions", "rules", "functions", "trust",
            "theme", "export", "copy", "help", "quit"}


def quiet() -> ScriptedProvider:
    return ScriptedProvider([[TextDelta("ok"), StreamEnd("end_turn")]] * 3)


def menu(app: KepApp) -> SlashMenu:
    found = app.query(SlashMenu)
    assert found, "no completion list"
    return found.first()


def rows(app: KepApp) -> list[str]:
    m = menu(app)
    return [str(m.get_option_at_index(i).prompt) for i in range(m.option_count)]


async def type_text(pilot: Pilot[Any], text: str) -> None:
    app = pilot.app
    await until(pilot, app.tools_ready.is_set, what="tools")  # type: ignore[attr-defined]
    app.query_one(PromptInput).focus()
    await pilot.press(*[{"/": "slash", " ": "space"}.get(c, c) for c in text])
    await pilot.pause()


def notes(app: KepApp) -> list[str]:
    return [n.message for n in app._notifications]


def test_the_table_has_every_command_the_issue_names() -> None:
    assert set(BUILTINS) >= REQUIRED
    for b in BUILTINS.values():
        assert b.description and b.name.isidentifier()


@pytest.mark.parametrize("size", SIZES)
async def test_typing_slash_lists_commands_and_enter_runs_the_highlighted(
        tmp_path: Path, size: tuple[int, int]) -> None:
    root = make_project(tmp_path / "proj")
    (root / "prompts" / "review.prompt").write_text(
        '.prompt {"name": "review", "description": "review a file"}\n.user look at <<file>>\n')
    provider = quiet()
    app = app_for(root, provider=provider)
    async with app.run_test(size=size) as pilot:
        await type_text(pilot, "/")
        await until(pilot, lambda: app.query(SlashMenu) and menu(app).is_open, what="list")
        shown = rows(app)
        assert any(r.startswith("/model") for r in shown)
        assert any(r.startswith("/review file") and "review a file" in r for r in shown)
        assert menu(app).region.height > 0  # on screen, also at 80×24
        await type_text(pilot, "mod")
        assert [r.split()[0] for r in rows(app)[:2]] == ["/model", "/mode"]
        await pilot.press("down")  # the highlight moves, the prompt keeps its text
        assert menu(app).chosen().name == "mode"  # type: ignore[union-attr]
        assert app.query_one(PromptInput).text == "/mod"
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette), what="mode picker")
    assert provider.requests == []  # nothing reached the model


async def test_tab_completes_and_escape_closes_the_list(tmp_path: Path) -> None:
    app = app_for(make_project(tmp_path / "proj"), provider=quiet())
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "/he")
        await pilot.press("tab")
        prompt = app.query_one(PromptInput)
        assert prompt.text == "/help " and not menu(app).is_open
        prompt.load_text("/co")
        await pilot.pause()
        assert menu(app).is_open
        await pilot.press("escape")
        assert not menu(app).is_open and prompt.text == "/co"


async def test_unknown_command_is_one_line_and_not_sent(tmp_path: Path) -> None:
    provider = quiet()
    app = app_for(make_project(tmp_path / "proj"), provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "/usr/bin/env is odd")
        await until(pilot, lambda: notes(app), what="a notice")
        (line,) = notes(app)
        assert "Unknown command /usr/bin/env" in line and "\n" not in line
        assert app.query_one(PromptInput).text == "/usr/bin/env is odd"  # nothing lost
        assert provider.requests == [] and not app.busy


async def test_double_slash_sends_a_literal_slash(tmp_path: Path) -> None:
    provider = quiet()
    app = app_for(make_project(tmp_path / "proj"), provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "//etc/hosts: what is it?")
        await wait_idle(pilot)
    assert provider.requests[0][-1].content == "/etc/hosts: what is it?"


@pytest.mark.parametrize("command, check", [
    ("/help keys", lambda app: type(app.screen).__name__ == "HelpScreen"),
    ("/functions", lambda app: not app.functions.has_class("-hidden")),
    ("/rules", lambda app: type(app.screen).__name__ == "RulesScreen"),
    ("/mode auto", lambda app: app.ws.mode == "auto"),
    ("/sessions", lambda app: type(app.screen).__name__ == "SessionPicker"
     or any("not being saved" in n for n in notes(app))),
])
async def test_builtins_run_the_apps_actions(tmp_path: Path, command: str, check: Any) -> None:
    provider = quiet()
    app = app_for(make_project(tmp_path / "proj"), provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, command)
        await until(pilot, lambda: check(app), what=command)
    assert provider.requests == []


async def test_a_builtin_given_arguments_it_does_not_take_says_so(tmp_path: Path) -> None:
    app = app_for(make_project(tmp_path / "proj"), provider=quiet())
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "/copy everything")
        await until(pilot, lambda: notes(app), what="a notice")
        assert notes(app) == ["/copy takes no arguments."]


async def test_clear_starts_a_new_session(tmp_path: Path) -> None:
    provider = quiet()
    app = app_for(make_project(tmp_path / "proj"), provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "hello")
        await wait_idle(pilot)
        assert app.chat.history
        await send(pilot, "/clear")
        await until(pilot, lambda: not app.chat.history, what="a new session")


async def test_a_user_command_shadowing_a_builtin(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    (root / "prompts" / "model.prompt").write_text(".user not the built-in\n")
    provider = quiet()
    app = app_for(root, provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "/model")
        shown = rows(app)
        assert any("shadowed by the built-in /model" in r for r in shown)
        m = menu(app)
        shadow = next(i for i, r in enumerate(shown) if "shadowed" in r)
        assert m.get_option_at_index(shadow).disabled
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette), what="model picker")
    assert provider.requests == []  # the built-in won: nothing was sent


async def test_a_user_command_starts_its_prompt_with_arguments(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    (root / "prompts" / "ask.prompt").write_text(
        '.prompt {"name": "ask", "params": {"tone": "plain"}}\n.user <<tone>>: <<question>>\n'
        ".exec\n")
    provider = quiet()
    app = app_for(root, provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        # a tab where a space was expected, and a quoted newline in a value
        await send(pilot, "/ask\ttone=short 'why\nis the sky blue'")
        await until(pilot, lambda: provider.requests, what="the prompt's request")
        await wait_idle(pilot)
    assert provider.requests[0][-1].content == "short: why\nis the sky blue"


async def test_a_user_command_with_an_unclosed_quote_sends_nothing(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    (root / "prompts" / "ask.prompt").write_text(".user <<question>>\n.exec\n")
    provider = quiet()
    app = app_for(root, provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "/ask 'oops")
        await until(pilot, lambda: notes(app), what="a notice")
        assert "cannot read the arguments" in notes(app)[0]
        assert app.query_one(PromptInput).text == "/ask 'oops"
    assert provider.requests == []


@pytest.mark.parametrize("size", SIZES)
async def test_hostile_names_are_shown_literally(tmp_path: Path, size: tuple[int, int]) -> None:
    root = make_project(tmp_path / "proj")
    for name in ("x\x1b]2;pwned\x07y", "[b]bold", "[@click=app.quit]q", "un[closed"):
        (root / "prompts" / f"{name}.prompt").write_text(
            '.prompt {"description": "\\u001b[31mred [i]it[/i]"}\n.user hi\n')
    app = app_for(root, provider=quiet())
    async with app.run_test(size=size) as pilot:
        await type_text(pilot, "/")
        await until(pilot, lambda: app.query(SlashMenu) and menu(app).is_open, what="list")
        shown = "\n".join(rows(app))
        assert "\x1b" not in shown and "\x07" not in shown
        assert "/[b]bold" in shown and "/[@click=app.quit]q" in shown and "/un[closed" in shown
        assert "[i]it[/i]" in shown
        await pilot.pause()
        assert app.is_running


async def test_two_hundred_commands(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    for i in range(200):
        (root / "prompts" / f"cmd{i:03}.prompt").write_text(
            f'.prompt {{"description": "command {i}"}}\n.user <<x>>\n')
    app = app_for(root, provider=quiet())
    async with app.run_test(size=(80, 24)) as pilot:
        await type_text(pilot, "/")
        await until(pilot, lambda: app.query(SlashMenu) and menu(app).is_open, what="list")
        assert menu(app).option_count == len(BUILTINS) + 200
        assert menu(app).region.height <= 10  # it scrolls; the prompt stays on screen
        assert app.query_one(PromptInput).region.height > 0
        await type_text(pilot, "cmd19")
        assert [r.split()[0] for r in rows(app)] == [f"/cmd19{i}" for i in range(10)]


async def test_history_walks_past_a_recalled_command(tmp_path: Path) -> None:
    app = app_for(make_project(tmp_path / "proj"), provider=quiet())
    async with app.run_test(size=SIZE) as pilot:
        await type_text(pilot, "/")  # the list exists from here on
        prompt = app.query_one(PromptInput)
        prompt.clear()
        for entry in ("first", "/mode", "last"):
            prompt.prompt_history.add(entry)
        await pilot.press("up", "up")
        assert prompt.text == "/mode" and not menu(app).is_open
        await pilot.press("up")
        assert prompt.text == "first"


async def test_the_list_stays_right_above_the_prompt(tmp_path: Path) -> None:
    from textual.widgets import Static

    app = app_for(make_project(tmp_path / "proj"), provider=quiet())
    async with app.run_test(size=(80, 24)) as pilot:
        await type_text(pilot, "/")
        prompt = app.query_one(PromptInput)
        chat = prompt.parent
        assert chat is not None
        await chat.mount(Static("a panel mounted later", id="later"), before=prompt)
        await type_text(pilot, "m")
        children = list(chat.children)
        assert children.index(menu(app)) + 1 == children.index(prompt)


async def test_slash_typed_with_the_keyboard_elsewhere_opens_the_list(tmp_path: Path) -> None:
    from tuiapp.ui.widgets.transcript import Transcript

    app = app_for(make_project(tmp_path / "proj"), provider=quiet())
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        app.query_one(Transcript).focus()
        await pilot.pause(0.6)  # (past the guard: the transcript has had the keyboard)
        await pilot.press("slash", "h", "e")
        await until(pilot, lambda: app.query(SlashMenu) and menu(app).is_open, what="list")
        assert app.query_one(PromptInput).text == "/he"
        assert rows(app)[0].startswith("/help")
