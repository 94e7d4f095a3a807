"""Issue 28 item 4 with the keyboard in the wrong place: several diff approvals (editfile and
writefile) pending, the prompt or a tool pane focused, at 80x24 and wide. Letters typed there
land where they were typed (none is lost, none answers a call); Esc goes to the approval, the
keys then answer the call shown, in order, and the long diff scrolls from the keyboard."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.containers import VerticalScroll
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
from tuiapp.ui.widgets import approval_keys
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.vocab.events import TextDelta
from tuiapp.vocab.messages import ToolCall

LONG = "".join(f"line {i}\n" for i in range(80))


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "proj")
    (root / "kep.toml").write_text("")  # kep's built-ins on
    (root / "a.txt").write_text(LONG)
    (root / "b.txt").write_text("bee\n")
    return root


def _provider() -> ScriptedProvider:
    calls = [
        ToolCall("c1", "writefile", {"filename": "a.txt", "content": "short\n"}),
        ToolCall("c2", "editfile", {"filename": "b.txt", "edits": [
            {"search": "bee", "replace": "BEE"}]}),
        ToolCall("c3", "writefile", {"filename": "c.txt", "content": "new\n"}),
    ]
    return ScriptedProvider([[*calls, StreamEnd("tool_use")],
                             [TextDelta("done"), StreamEnd("end_turn")]])


async def _answer(pilot, panel, call_id: str, key: str) -> None:  # type: ignore[no-untyped-def]
    await until(pilot, lambda: panel.current is not None and panel.current.call.id == call_id,
                what=call_id)
    await until(pilot, lambda: panel.has_focus, what="panel focus")
    await pilot.pause(approval_keys.GUARD_SECONDS + 0.15)
    await pilot.press(key)


@pytest.mark.parametrize("size", [(80, 24), SIZE])
@pytest.mark.parametrize("where", ["prompt", "tool pane"])
async def test_focus_elsewhere_then_the_keys_answer_the_right_diff_call(
        proj: Path, size: tuple[int, int], where: str) -> None:
    app = app_for(proj, provider=_provider())
    async with app.run_test(size=size) as pilot:
        await send(pilot, "edit")
        panel = await wait_approval(pilot)
        box = app.query_one(PromptInput)
        if where == "prompt":
            box.focus()
        else:
            panes = [w for w in app.screen.query("*") if w.focusable and w is not box
                     and panel not in w.ancestors_with_self and w is not panel]
            assert panes, "nothing else to focus"
            panes[0].focus()
        await pilot.pause(0.1)
        typed = "yes y n"
        await pilot.press(*typed)
        await pilot.pause(0.3)
        # no letter answered a call; in the prompt, every one of them is there
        assert (proj / "a.txt").read_text() == LONG and (proj / "b.txt").read_text() == "bee\n"
        assert panel.current is not None and panel.current.call.id == "c1"
        if where == "prompt":
            assert box.text == typed
        if not panel.has_focus:
            await pilot.press("escape")
        await until(pilot, lambda: panel.has_focus, what="panel focus")
        # the long diff of the first call scrolls from the keyboard
        args = panel.query_one(".approval-args", VerticalScroll)
        await until(pilot, lambda: args.max_scroll_y > 0, what="a scrollable diff")
        before = args.scroll_y
        await pilot.press("pagedown")
        await pilot.pause(0.2)
        assert args.scroll_y > before and panel.has_focus
        await pilot.press("pageup")
        await pilot.pause(0.2)
        assert args.scroll_y == before
        await _answer(pilot, panel, "c1", "n")
        await pilot.press("enter")  # no reason given
        await _answer(pilot, panel, "c2", "y")
        await _answer(pilot, panel, "c3", "y")
        await wait_idle(pilot)
        if where == "prompt":
            assert box.text == typed  # still there after the answers
    assert (proj / "a.txt").read_text() == LONG  # denied
    assert (proj / "b.txt").read_text() == "BEE\n"
    assert (proj / "c.txt").read_text() == "new\n"
