"""Every terminal size works: resizing from 200x60 down to 20x6 with the panels open never
crashes (it did at 39-41 columns with the tool panes open: `range() arg 3 must not be zero`).
Below 100 columns the tool panes and the functions panel are overlays toggled by their keys;
at 80x24 the footer keys and a whole tool-call line are readable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from tui_helpers import ScriptedProvider, app_for, make_project, send, until, wait_idle

from tuiapp.providers.base import StreamEnd
from tuiapp.ui.app import KepApp
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.ui.widgets.transcript import Transcript
from tuiapp.vocab.events import TextDelta
from tuiapp.vocab.messages import ToolCall

LONG_ARGS = {"path": "notes.txt", "mode": "upper", "note": "keep the whole line readable"}


def project(root: Path) -> Path:
    make_project(root)
    (root / "kep.toml").write_text('[approval]\ndefault = "allow"\n[tools]\nbuiltins = false\n')
    return root


def provider() -> ScriptedProvider:
    return ScriptedProvider([
        [TextDelta("Let me shout it. " * 20), ToolCall("c1", "shout", LONG_ARGS),
         StreamEnd("tool_use")],
        [TextDelta("Done: the file is shouted. " * 10), StreamEnd("end_turn")]])


def screen_lines(pilot: Pilot[Any]) -> list[str]:
    return [strip.text for strip in pilot.app.screen._compositor.render_strips()]


def shown(app: KepApp, panel: str) -> bool:
    return not app.query_one(panel).has_class("-hidden")


def sizes() -> list[tuple[int, int]]:
    out = [(200, 60), (160, 50), (120, 40), (101, 30), (100, 30), (99, 30), (90, 28)]
    out += [(w, 24) for w in (80, 70, 60, 50, 45, 42, 41, 40, 39, 38, 35)]  # the old crash
    out += [(30, 16), (25, 10), (22, 8), (20, 7), (20, 6), (21, 6), (40, 6), (120, 6),
            (20, 40), (100, 24), (200, 60)]
    return out


@pytest.mark.slow
async def test_resizing_down_to_20x6_with_the_panels_open_never_crashes(
        tmp_path: Path) -> None:
    app = app_for(project(tmp_path / "proj"), provider=provider())
    async with app.run_test(size=(200, 60)) as pilot:
        await send(pilot, "shout notes.txt")
        await wait_idle(pilot)
        for width, height in sizes():
            await pilot.resize_terminal(width, height)
            await pilot.pause()
            # Open both panels at every size (overlays when narrow), and draw the screen.
            for panel, key in (("#panes", "ctrl+t"), ("#functions", "ctrl+f")):
                if not shown(app, panel):
                    await pilot.press(key)
            await pilot.pause()
            lines = screen_lines(pilot)
            assert len(lines) == height and app.is_running, (width, height)
        # Still usable: a key reaches the prompt.
        app.query_one(PromptInput).focus()
        await pilot.press("h", "i")
        assert app.query_one(PromptInput).text.endswith("hi")
    assert app.return_code in (None, 0)


async def test_below_100_columns_the_panels_are_overlays_toggled_by_their_keys(
        tmp_path: Path) -> None:
    app = app_for(project(tmp_path / "proj"), provider=provider())
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, "shout notes.txt")
        await wait_idle(pilot)
        assert shown(app, "#panes")  # wide: opened by the tool call, beside the chat
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        transcript = app.query_one(Transcript)
        assert not shown(app, "#panes") and not shown(app, "#functions")  # folded away
        full = transcript.region.width
        assert full >= 78
        await pilot.press("ctrl+t")
        await pilot.pause()
        panes = app.query_one("#panes")
        assert shown(app, "#panes") and panes.region.width >= 60
        assert transcript.region.width == full  # over the chat, which keeps its width
        assert panes.region.overlaps(transcript.region)
        await pilot.press("ctrl+t")
        await pilot.press("ctrl+f")
        await pilot.pause()
        assert not shown(app, "#panes") and shown(app, "#functions")
        assert transcript.region.width == full
        await pilot.press("ctrl+f")
        await pilot.resize_terminal(120, 40)  # wide again: as it was when last wide
        await pilot.pause()
        assert shown(app, "#panes") and not shown(app, "#functions")
        assert transcript.region.width < 100


async def test_at_80x24_the_footer_keys_and_a_whole_tool_call_line_are_readable(
        tmp_path: Path) -> None:
    app = app_for(project(tmp_path / "proj"), provider=provider())
    async with app.run_test(size=(80, 24)) as pilot:
        await send(pilot, "shout notes.txt")
        await wait_idle(pilot)
        await until(pilot, lambda: app.query(".tool-block.-ok"), what="the tool block")
        app.query_one(".tool-block").scroll_visible(animate=False)
        await pilot.pause()
        lines = screen_lines(pilot)
        footer = lines[-1]
        for label in ("send", "commands", "functions", "panes", "quit"):  # every idle key
            assert f" {label}" in footer, footer
        block = app.query_one(".tool-block").region
        text = " ".join(line.strip(" ▕▏▌│") for line in lines[block.y:block.bottom])
        text = " ".join(text.split())
        assert '"note": "keep the whole line readable"}' in text, "\n".join(lines)
        assert "…" not in text and "exit 0" in text
