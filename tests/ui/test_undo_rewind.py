"""Issue 28 item 5 in the app: undo puts back what kep's writefile wrote; ctrl+up picks an
earlier message and rewinds the conversation (a new session; the original kept) and the
files. At 80x24 and wide, with the keyboard in the message box."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Button, Static
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

from tuiapp.conversation.store import Store
from tuiapp.providers.base import StreamEnd
from tuiapp.ui.screens.rewind import RewindScreen
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.vocab.events import TextDelta
from tuiapp.vocab.messages import ToolCall


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "proj")
    (root / "kep.toml").write_text("")  # kep's built-ins on
    (root / "a.txt").write_text("original\n")
    return root


def provider() -> ScriptedProvider:
    w1 = ToolCall("w1", "writefile", {"filename": "a.txt", "content": "first\n"})
    w2 = ToolCall("w2", "writefile", {"filename": "new.txt", "content": "\x1b[2Jnew\n"})
    end = StreamEnd("end_turn")
    return ScriptedProvider([[w1, StreamEnd("tool_use")], [TextDelta("one"), end],
                             [w2, StreamEnd("tool_use")], [TextDelta("two"), end]])


@pytest.mark.parametrize("size", [(80, 24), SIZE])
async def test_undo_then_rewind_both(proj: Path, tmp_path: Path, size: tuple[int, int]) -> None:
    store = Store.open(tmp_path / "s.db")
    app = app_for(proj, provider=provider(), store=store)
    async with app.run_test(size=size) as pilot:
        for text in ("write a", "write new"):
            await send(pilot, text)
            await wait_approval(pilot)
            await pilot.press("y")
            await wait_idle(pilot)
        assert (proj / "a.txt").read_text() == "first\n" and (proj / "new.txt").exists()
        await app.run_action("undo")
        await until(pilot, lambda: not (proj / "new.txt").exists())
        assert (proj / "a.txt").read_text() == "first\n"  # only the last call's
        original = app.chat.session_id
        app.query_one(PromptInput).focus()
        await pilot.press("ctrl+up")
        await until(pilot, lambda: isinstance(app.screen, RewindScreen))
        screen = app.screen
        note = " ".join(str(s.render()) for s in screen.query(Static))
        assert "not restored" in note and "original" in note
        await pilot.press("up", "enter")  # the first of my two messages
        await pilot.pause(0.2)
        screen.query_one("#rewind-both", Button).press()
        await until(pilot, lambda: app.chat.session_id != original)
        await until(pilot, lambda: (proj / "a.txt").read_text() == "original\n")
        assert app.query_one(PromptInput).text == "write a"
        assert store.load_messages(app.chat.session_id) == []
        assert len(store.load_messages(original)) >= 6  # the original is kept
