"""`[keys]` in the running app: a moved approval key answers and the old one is typing, the
footer and the approval's buttons and the help screen show the keys in force, a bad table is
one line each and kep still starts; ctrl+x ctrl+e opens the message in $VISUAL."""

from __future__ import annotations

import contextlib
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Static
from tui_helpers import SIZE, app_for, make_project, send, until, wait_approval, wait_idle

from tuiapp.settings import paths
from tuiapp.ui import keys
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.ui.widgets.status_footer import StatusFooter


@pytest.fixture(autouse=True)
def defaults() -> Iterator[None]:
    yield
    keys.apply({})


def user_keys(text: str) -> None:
    user = paths.user_config_file()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(text)


@pytest.mark.parametrize("size", [SIZE, (80, 24)])
async def test_a_moved_approval_key_answers_and_the_old_one_is_typing(
        tmp_path: Path, size: tuple[int, int]) -> None:
    user_keys('[keys]\napprove = "j"\n')
    proj = make_project(tmp_path / "proj")
    app = app_for(proj)
    async with app.run_test(size=size) as pilot:
        await send(pilot, "shout notes.txt")
        panel = await wait_approval(pilot)
        footer = app.query_one(StatusFooter)
        assert "j allow" in footer.render().plain
        assert any(b.label.plain.startswith("j ") for b in panel.query("KeyButton"))
        await pilot.press("y")  # typing now: goes to the message box, answers nothing
        await pilot.pause(0.2)
        assert not (proj / "shout.ran").exists() and panel.current is not None
        assert app.query_one(PromptInput).text == "y"
        panel.focus()
        await pilot.pause(0.6)  # past the guard: keys typed sooner go to the message box
        await pilot.press("j")
        await wait_idle(pilot)
        assert (proj / "shout.ran").read_text() == "notes.txt\n"


async def test_a_bad_keys_table_is_one_line_each_and_kep_starts(tmp_path: Path) -> None:
    user_keys('[keys]\nfrobnicate = "j"\napprove = "n"\nhelp = "ctrl+\\u001b"\n'
              'toggle_panes = "f10"\n')
    app = app_for(make_project(tmp_path / "proj"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: len(app._notifications) >= 3, what="the key lines")
        lines = [n.message for n in app._notifications if n.title == "Keys"]
        assert len(lines) == 3 and all("\n" not in line and "\x1b" not in line
                                       for line in lines)
        assert keys.key("toggle_panes") == "f10" and keys.key("approve") == "y"
        await pilot.press("f10")  # the good entry still applies
        await until(pilot, lambda: not app.panes.has_class("-hidden"), what="panes")
        await pilot.press("f1")  # the help screen names the keys in force
        await until(pilot, lambda: type(app.screen).__name__ == "HelpScreen", what="help")
        await pilot.press("ctrl+a")  # (no effect: the search box has the keyboard)
        await app.screen.show("keys")
        note = app.screen.query_one("#keys-in-force", Static)
        assert "toggle_panes f10 (default ctrl+t)" in str(note.render())


def editor_script(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-editor"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


async def test_ctrl_x_ctrl_e_edits_the_message_in_visual(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VISUAL", editor_script(tmp_path, 'printf " and more\\n" >> "$1"'))
    before = set(Path(tempfile.gettempdir()).glob("kep-message-*"))
    app = app_for(make_project(tmp_path / "proj"))
    monkeypatch.setattr(app, "suspend", contextlib.nullcontext)  # no terminal in a test
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.load_text("draft")
        prompt.focus()
        await pilot.press("ctrl+x", "ctrl+e")
        await until(pilot, lambda: prompt.text == "draft and more", what="the edited text")
        # ctrl+x then anything else: ctrl+x does what it does alone (cut), the key goes on
        prompt.select_all()
        await pilot.press("ctrl+x", "z")
        await pilot.pause()
        assert prompt.text == "z"
    assert set(Path(tempfile.gettempdir()).glob("kep-message-*")) == before  # deleted


async def test_an_editor_that_fails_leaves_the_message(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VISUAL", editor_script(tmp_path, 'echo x > "$1"; exit 3'))
    app = app_for(make_project(tmp_path / "proj"))
    monkeypatch.setattr(app, "suspend", contextlib.nullcontext)
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.load_text("keep me")
        prompt.focus()
        await pilot.press("ctrl+x", "ctrl+e")
        await until(pilot, lambda: app._notifications, what="a notice")
        assert "exited with 3" in next(iter(app._notifications)).message
        assert prompt.text == "keep me"


async def test_no_editor_set_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    app = app_for(make_project(tmp_path / "proj"))
    async with app.run_test(size=SIZE) as pilot:
        app.query_one(PromptInput).focus()
        await pilot.press("ctrl+x", "ctrl+e")
        await until(pilot, lambda: app._notifications, what="a notice")
        assert "$VISUAL" in next(iter(app._notifications)).message


