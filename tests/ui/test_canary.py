"""The canary harness, in the TUI: a hostile checkout and a hostile MCP server (and one that
fails with a hostile stderr), every string field of theirs a payload (tests/fakes/canary.py),
driven through every screen of one app: the trust question, the functions panel, the
palette with its MCP restart entries, the workbench with each drop-down opened and a choice
picked, the chat with several calls waiting for approval, the tool panes and the full
output, the session picker and the tool editor.

It passes when no payload acts: no action ran (kep still runs, no file was written, no fake
notice), nothing a terminal acts on reached the rendered screen (ESC, 8-bit CSI, BEL, bidi
controls, invalid UTF-8, a run of invisible characters), and no wait timed out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakes import canary
from textual.pilot import Pilot
from textual.widgets import Select
from textual.widgets._toast import Toast
from tui_helpers import ScriptedProvider, app_for, send, until, wait_approval

from tuiapp.conversation.store import Store
from tuiapp.providers.base import StreamEnd
from tuiapp.ui.app import KepApp
from tuiapp.ui.screens.trust import TrustScreen
from tuiapp.vocab.events import TextDelta
from tuiapp.vocab.messages import ToolCall

FORM = "canary_canary_form"


def _strips(app: KepApp) -> str:
    return "\n".join(s.text for s in app.screen._compositor.render_strips())


def _clickable_payloads(app: KepApp) -> list[str]:
    """Actions a click on the screen would run that came from a payload (a markup action
    parsed from foreign text leaves an @click in the segments' style meta)."""
    found = []
    for strip in app.screen._compositor.render_strips():
        for segment in strip:
            meta = segment.style.meta if segment.style is not None else {}
            action = str(meta.get("@click", ""))
            if any(word in action for word in ("victim", "FAKE-NOTICE", "simulate_key")) \
                    or (action == "app.quit" and segment.text.strip() == "Q"):
                found.append(action)  # (kep's own footer has "ctrl+q quit": not a payload)
    return found


def _inert(app: KepApp, where: str, cwd: Path) -> str:
    """Nothing acted: the screen at `where` holds nothing a terminal would act on, kep runs,
    no file was written by an action, no notice was faked. Returns the screen's text."""
    assert app.is_running and app.return_code is None, f"{where}: kep quit"
    screen = _strips(app)
    for raw in canary.RAW:
        assert raw not in screen, f"{where}: {raw!r} reached the screen"
    assert "\u2800" * 8 not in screen, f"{where}: an invisible run reached the screen"
    assert not _clickable_payloads(app), f"{where}: a payload's action is clickable"
    for folder in (cwd, app.ws.root):
        assert not (folder / canary.VICTIM_DIR).exists(), f"{where}: the screenshot ran"
    assert not any(n.message == "FAKE-NOTICE" for n in app._notifications), where
    for toast in app.screen.query(Toast):
        shown = str(toast.render())
        assert not any(raw in shown for raw in canary.RAW), f"{where}: a toast"
    return screen


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KEP_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    return canary.make_checkout(tmp_path / "proj")


async def _pick_every_choice(pilot: Pilot[Any], app: KepApp, cwd: Path) -> int:
    """Open each drop-down of the workbench's form, look, and pick its first choice."""
    selects = list(app.query("#bench-form Select"))
    for select in selects:
        assert isinstance(select, Select)
        select.focus()
        await pilot.pause()
        await pilot.press("enter")  # the overlay with the choices
        await pilot.pause(0.1)
        _inert(app, "an open drop-down", cwd)
        await pilot.press("down", "enter")  # picked
        await pilot.pause(0.1)
        _inert(app, "a picked choice", cwd)
    return len(selects)


@pytest.mark.slow
async def test_no_payload_acts_on_any_screen(checkout: Path, tmp_path: Path) -> None:
    hidden = {"path": f"notes{canary.HIDDEN}{canary.TAIL}", "note": canary.PAYLOAD}
    calls = [ToolCall("c1", FORM, hidden), ToolCall("c2", "canary_tool", {"x": canary.PAYLOAD}),
             ToolCall("c3", canary.tag("model.tool_name"), {})]
    provider = ScriptedProvider([
        [TextDelta(canary.tag("model.text")), *calls, StreamEnd("tool_use")],
        [TextDelta(canary.tag("model.after")), StreamEnd("end_turn")]])
    with Store.open() as store:
        await _drive(app_for(checkout, provider=provider, store=store), checkout, tmp_path)


async def _drive(app: KepApp, checkout: Path, tmp_path: Path) -> None:
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        # The trust question: every item whole, the payloads in names shown as symbols.
        await until(pilot, lambda: isinstance(app.screen, TrustScreen)
                    and bool(app.screen.query("#trust")), what="the trust screen")
        text = str(app.screen.query_one("#trust-text").render())
        assert ")$|.*/ args ~ /^NEVER$/" in text  # the long rule's end, not cut
        _inert(app, "the trust screen", tmp_path)
        await pilot.pause(0.6)  # (clicks in the first half second do not count)
        await pilot.click("#trust")
        await until(pilot, lambda: FORM in app.ws.registry.tools, timeout=60,
                    what="the canary server's tools")
        assert app.ws.mcp is not None
        await until(pilot, lambda: app.ws.mcp.states()["failing"].status == "failed",
                    timeout=60, what="the failing server")
        await pilot.pause(0.2)
        _inert(app, "the chat, servers up", tmp_path)

        await pilot.press("ctrl+f")
        await pilot.pause(0.2)
        _inert(app, "the functions panel", tmp_path)
        await pilot.press("ctrl+f")

        # The palette: its MCP entries carry the failing server's stderr as help.
        await pilot.press("ctrl+p")
        await pilot.pause(0.1)
        await pilot.press(*"restart")
        await pilot.pause(0.5)
        screen = _inert(app, "the palette", tmp_path)
        assert "MCP: restart failing" in screen and "[@click=app.quit]" in screen
        await pilot.press("escape")
        await pilot.pause(0.1)

        # The workbench: the form of a schema whose every keyword is a payload.
        assert app.open_tool(FORM)
        await until(pilot, lambda: bool(app.query("#bench-form Select")), what="the form")
        await pilot.pause(0.2)
        _inert(app, "the workbench", tmp_path)
        assert await _pick_every_choice(pilot, app, tmp_path) >= 2

        # The chat: three calls wait; the invisible run is a marker, the rest in view.
        await send(pilot, "go")
        panel = await wait_approval(pilot)
        await pilot.pause(0.2)
        _inert(app, "the approval panel", tmp_path)
        shown = str(app.query_one("#approval .approval-json").render())
        assert "notes⟨U+2800 ×3000⟩; touch PWNED" in shown
        for _ in range(3):
            await until(pilot, lambda: panel.current is not None or not app.busy,
                        what="the next call")
            if panel.current is None:
                break
            _inert(app, "an approval", tmp_path)
            panel.action_allow()
            await pilot.pause(0.2)
        await until(pilot, lambda: not app.busy, timeout=60, what="the turn to end")
        await pilot.pause(0.2)
        _inert(app, "the reply and tool blocks", tmp_path)
        if app.panes.has_class("-hidden"):
            await pilot.press("ctrl+t")
        await pilot.pause(0.2)
        _inert(app, "the tool panes", tmp_path)
        app.panes.action_open_output()
        from tuiapp.ui.screens.output_viewer import OutputViewer

        await until(pilot, lambda: isinstance(app.screen, OutputViewer), what="the viewer")
        await pilot.pause(0.3)
        _inert(app, "the full output", tmp_path)
        await pilot.press("escape")
        await pilot.pause(0.1)

        await pilot.press("ctrl+o")
        from tuiapp.ui.screens.session_picker import SessionPicker

        await until(pilot, lambda: isinstance(app.screen, SessionPicker), what="the picker")
        await pilot.pause(0.3)
        _inert(app, "the session picker", tmp_path)
        await pilot.press("escape")
        await pilot.pause(0.1)

        from tuiapp.ui.screens.tool_editor import ToolEditor

        broken = next(p for p in (checkout / "prompts" / "functions").iterdir()
                      if p.name.startswith("broken"))
        app.push_screen(ToolEditor(broken))
        await until(pilot, lambda: isinstance(app.screen, ToolEditor), what="the editor")
        await pilot.pause(0.3)
        _inert(app, "the tool editor", tmp_path)
        await pilot.press("escape")
        await pilot.pause(0.1)
        _inert(app, "the end", tmp_path)
