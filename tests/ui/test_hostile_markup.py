"""Foreign text is never read as Textual markup: a tool name or an error holding
`[@click=app.quit]x`, an unbalanced `[/]` or `[b]` can neither run an action, crash the app nor
style anything; it is shown as it is (tool panes' tabs, notifications, the palette)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.content import Content
from textual.fuzzy import Matcher
from textual.pilot import Pilot
from textual.widgets._toast import Toast
from tui_helpers import ScriptedProvider, app_for, make_project, send, until, wait_idle

from tuiapp.providers.base import StreamEnd
from tuiapp.ui.literal import escaped, highlighted, literal
from tuiapp.ui.widgets.tool_panes import ToolPanes
from tuiapp.vocab.messages import ToolCall

HOSTILE = ["[@click=app.quit]x", "[/]", "[b]bold", "a\\[b]c", "[link='http://e']y"]


def _screen(pilot: Pilot[Any]) -> str:
    return "\n".join(s.text for s in pilot.app.screen._compositor.render_strips())


def _no_markup(content: Content, plain: str) -> None:
    assert plain in content.plain
    for span in content.spans:
        assert "@click" not in str(span.style) and "link" not in str(span.style), span


async def test_hostile_tool_names_show_literally_in_blocks_and_tabs(tmp_path: Path) -> None:
    calls = [ToolCall(f"c{i}", name, {}) for i, name in enumerate(HOSTILE)]
    provider = ScriptedProvider([[*calls, StreamEnd("tool_use")], [StreamEnd("end_turn")]])
    root = make_project(tmp_path / "proj")
    (root / "kep.toml").write_text('[approval]\ndefault = "allow"\n')
    app = app_for(root, provider=provider)
    async with app.run_test(size=(160, 50)) as pilot:
        await send(pilot, "go")
        await wait_idle(pilot)
        panes = app.query_one(ToolPanes)
        await until(pilot, lambda: all(panes.pane(c.id) for c in calls), what="the panes")
        await pilot.pause(0.1)
        screen = _screen(pilot)
        for name in HOSTILE:
            assert name in screen  # the unknown tool's block, as written
        labels = [tab.label for tab in app.query("ContentTab")]  # type: ignore[attr-defined]
        for name in HOSTILE:
            assert any(name in label.plain for label in labels), name
        for label in labels:
            _no_markup(label, "")
        for tab in list(app.query("ContentTab")):
            await pilot.click(tab)  # a click on a name runs nothing
            await pilot.pause()
        assert app.return_code is None and app.is_running


async def test_notifications_show_hostile_text_literally(tmp_path: Path) -> None:
    app = app_for(make_project(tmp_path / "proj"))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        for text in HOSTILE:
            # As a tool's or server's error reaches the user (actions.py, live_reload.py).
            app.notify(f"MCP server {text} failed: {text}", title=text, severity="error")
        await pilot.pause(0.3)
        toasts = list(app.screen.query(Toast))
        assert len(toasts) == len(HOSTILE)
        shown = [toast.render() for toast in toasts]
        for text in HOSTILE:
            assert any(f"MCP server {text} failed: {text}" in c.plain for c in shown), text
        for content in shown:
            assert isinstance(content, Content)
            _no_markup(content, "")
        for toast in toasts:
            await pilot.click(toast)  # a click on a toast dismisses it, nothing more
        await pilot.pause(0.1)
        assert app.return_code is None and app.is_running


@pytest.mark.parametrize("text", [*HOSTILE, "C:\\dir\\[x]", "\\", "x["])
def test_palette_text_is_shown_as_written(text: str) -> None:
    assert Content.from_markup(escaped(text) or "").plain == text
    assert literal(text).plain == text
    lit = highlighted(Matcher("b"), text)
    assert lit.plain == text
    _no_markup(lit, text)


def test_palette_text_is_sanitised_too() -> None:
    assert highlighted(Matcher("x"), "x\x1b]2;t\x07").plain == "x␛]2;t␇"
    assert escaped("[b]\x1b") == "\\[b]␛"
