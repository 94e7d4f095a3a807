"""Issue 28 item 4 in the app: kep's writefile / editfile calls show a coloured, scrollable
unified diff with its counts in the approval panel, at 80x24 and wide, with several calls
pending and the keyboard elsewhere; hostile content is shown, never acted on."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.containers import VerticalScroll
from textual.widgets import Static
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
from tuiapp.vocab.events import TextDelta
from tuiapp.vocab.messages import ToolCall

ESC = "\x1b]52;c;cHduZWQ=\x07\x1b[2J[b]bold[/b]"


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "proj")
    (root / "kep.toml").write_text("")  # kep's built-ins on
    (root / "a.txt").write_text("".join(f"line {i}\n" for i in range(60)))
    return root


def shown(panel: object) -> str:
    return str(panel.query_one(".approval-json", Static).render())  # type: ignore[attr-defined]


@pytest.mark.parametrize("size", [(80, 24), SIZE])
async def test_the_diff_is_shown_per_call_scrolls_and_answers_write(
        proj: Path, size: tuple[int, int]) -> None:
    calls = [
        ToolCall("c1", "editfile", {"filename": "a.txt", "edits": [
            {"search": "line 3\n", "replace": f"LINE 3 {ESC}\n"}]}),
        ToolCall("c2", "writefile", {"filename": "a.txt", "content": "short\n"}),
        ToolCall("c3", "editfile", {"filename": "a.txt", "edits": [
            {"search": "line", "replace": "x"}]}),
    ]
    provider = ScriptedProvider([[*calls, StreamEnd("tool_use")],
                                 [TextDelta("done"), StreamEnd("end_turn")]])
    app = app_for(proj, provider=provider)
    async with app.run_test(size=size) as pilot:
        await send(pilot, "edit")
        panel = await wait_approval(pilot)
        text = shown(panel)
        assert "a.txt" in text and "+1 −1" in text
        assert "-line 3" in text and "+LINE 3 ␛]52" in text
        assert "\x1b" not in text and "[b]bold[/b]" in text  # shown literally
        await pilot.press("y")
        await until(pilot, lambda: panel.current is not None and panel.current.call.id == "c2")
        await pilot.pause(0.6)
        text = shown(panel)
        assert "+1 −60" in text  # the diff against the file as the first call left it
        box = panel.query_one(".approval-args", VerticalScroll)
        assert box.max_scroll_y > 0  # a long diff scrolls inside the panel
        await pilot.press("n")
        await pilot.press("enter")
        await until(pilot, lambda: panel.current is not None and panel.current.call.id == "c3")
        await pilot.pause(0.6)
        assert "appears 59 times" in shown(panel)  # it will fail: said before it runs
        await pilot.press("n")
        await pilot.press("enter")
        await wait_idle(pilot)
    assert "LINE 3" in (proj / "a.txt").read_text() and "line 4" in (proj / "a.txt").read_text()


async def test_a_link_out_of_the_root_shows_refused_and_nothing_of_the_target(
        proj: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("TOP SECRET\n")
    (proj / "out.txt").symlink_to(tmp_path / "secret.txt")
    calls = [ToolCall("c1", "writefile", {"filename": "out.txt", "content": "x\n"})]
    provider = ScriptedProvider([[*calls, StreamEnd("tool_use")],
                                 [TextDelta("done"), StreamEnd("end_turn")]])
    app = app_for(proj, provider=provider)
    async with app.run_test(size=(80, 24)) as pilot:
        await send(pilot, "write")
        panel = await wait_approval(pilot)
        text = shown(panel)
        assert "refused" in text and "outside the project" in text and "SECRET" not in text
        await pilot.press("y")
        await wait_idle(pilot)
    assert (tmp_path / "secret.txt").read_text() == "TOP SECRET\n"
