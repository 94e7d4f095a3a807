"""The TUI's display edge: control sequences in model text, tool names, file names and tool
output are shown as visible symbols, never handed to the terminal (`ESC ] 52` would write
the clipboard, `ESC ] 2` the window title)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from conftest import write_tool
from textual.pilot import Pilot
from tui_helpers import ScriptedProvider, app_for, send, until, wait_idle

from tuiapp.providers.base import StreamEnd
from tuiapp.ui.literal import say
from tuiapp.ui.widgets.tool_panes import ToolPanes
from tuiapp.vocab.events import TextDelta
from tuiapp.vocab.messages import Message, ToolCall

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
OSC2 = "\x1b]2;pwned\x1b\\"
UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")

NOISY = r'''#!/usr/bin/env python3
import json, sys
if sys.argv[1:] == ["--list-functions"]:
    print(json.dumps([{"name": "noisy", "description": "Desc \x1b]2;desc-title\x07 here",
                       "parameters": {"type": "object", "properties": {}}}]))
    sys.exit(0)
sys.stdin.read()
sys.stdout.write("\x1b[31mred\x1b[0m \x1b]52;c;Y2xpcA==\x07 out \x9b31m\n")
sys.stdout.flush()
sys.stdout.buffer.write(b"bad \xff\xfe bytes \x1b\n")
sys.stderr.write("err \x1b]2;title\x07\n")
'''


def _screen(pilot: Pilot[Any]) -> str:
    return "\n".join(s.text for s in pilot.app.screen._compositor.render_strips())


def _assert_safe(text: str) -> None:
    bad = UNSAFE.findall(text)
    assert not bad, f"raw control characters reached the screen: {bad!r}"


def _project(root: Path) -> Path:
    functions = root / "prompts" / "functions"
    functions.mkdir(parents=True)
    write_tool(functions / "noisy", NOISY)
    # A broken tool whose file name holds a title sequence: the panel shows its path.
    write_tool(functions / "bad\x1b]2;file-title\x07name", "#!/bin/sh\nexit 3\n")
    (root / "kep.toml").write_text('[approval]\ndefault = "allow"\n[tools]\nbuiltins = false\n')
    return root


async def test_model_text_tool_names_and_output_reach_the_screen_only_as_symbols(
        tmp_path: Path) -> None:
    calls = [ToolCall("c1", "noisy", {"note": f"arg {OSC52} \x9b"}),
             ToolCall("c2", f"ghost{OSC2}", {})]
    provider = ScriptedProvider([
        [TextDelta(f"Reply {OSC52} then "), TextDelta(f"{OSC2} lone \x1b and C1 \x9b31m\r"),
         TextDelta("\nend"), *calls, StreamEnd("tool_use")],
        [TextDelta("after the tools"), StreamEnd("end_turn")]])
    app = app_for(_project(tmp_path / "proj"), provider=provider)
    # Wide enough for the chat (60 columns), the functions panel and the panes side by side.
    async with app.run_test(size=(200, 50)) as pilot:
        await send(pilot, "go")
        await wait_idle(pilot)
        await pilot.press("ctrl+f")  # the functions panel, with the broken file's name
        await pilot.pause(0.2)
        screen = _screen(pilot)
        _assert_safe(screen)
        assert "Reply ␛]52;c;ZWNobyBwd25lZA==␇ then ␛]2;pwned␛\\ lone" in screen
        assert "␛ and C1 \N{REPLACEMENT CHARACTER}31m end" in screen  # CR LF: one line break
        assert "ghost␛]2;pwned␛\\" in screen  # the unknown tool's name in its block
        assert "bad␛]2;file-title␇" in screen  # the broken file in the functions panel
        panes = app.query_one(ToolPanes)
        pane = panes.pane("c1")
        assert pane is not None
        lines = pane.output.lines()
        assert "red ␇" not in "".join(lines)  # colours dropped, the rest visible
        assert any(line.startswith("red  out") for line in lines)
        assert all(not UNSAFE.search(line) for line in lines)
        for label in app.query("Tab"):
            _assert_safe(str(label.label))  # type: ignore[attr-defined]
        # Every widget's visible text, also those scrolled away or hidden.
        for widget in app.query("Static"):
            _assert_safe(str(widget.render()))


async def test_a_resumed_session_and_notifications_are_cleaned(tmp_path: Path) -> None:
    history = [Message("user", f"hi {OSC2}"), Message("assistant", f"saved {OSC52} reply")]
    app = app_for(_project(tmp_path / "proj"), history=history)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        app.notify(say("tool said {}", OSC52), title=say("from {}", OSC2))
        await pilot.pause(0.2)
        screen = _screen(pilot)
        _assert_safe(screen)
        assert "saved ␛]52;c;ZWNobyBwd25lZA==␇ reply" in screen
        assert "hi ␛]2;pwned␛\\" in screen
        (note,) = list(app._notifications)
        assert note.message == "tool said ␛]52;c;ZWNobyBwd25lZA==␇"
        assert note.title == "from ␛]2;pwned␛\\"


EVIL_NAME = r'''#!/usr/bin/env python3
import json, sys
if sys.argv[1:] == ["--list-functions"]:
    print(json.dumps([{"name": "evil", "description": "d",
                       "parameters": {"type": "object", "properties": {}}}]))
    sys.exit(0)
print("ran")
'''


async def test_the_approval_panel_shows_a_hostile_file_name_and_arguments_as_symbols(
        tmp_path: Path) -> None:
    from tui_helpers import wait_approval

    root = tmp_path / "proj"
    (root / "prompts" / "functions").mkdir(parents=True)
    # (A tool's name is checked by the registry; its file name is not.)
    write_tool(root / "prompts" / "functions" / "evil\x1b]2;approval-title\x07", EVIL_NAME)
    (root / "kep.toml").write_text("[tools]\nbuiltins = false\n")  # a project tool: asked
    provider = ScriptedProvider([
        [ToolCall("c1", "evil", {"x": f"{OSC52}\x9b\x7f"}), StreamEnd("tool_use")],
        [TextDelta("ok"), StreamEnd("end_turn")]])
    app = app_for(root, provider=provider)
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, "go")
        await wait_approval(pilot)
        await pilot.pause(0.1)
        screen = _screen(pilot)
        _assert_safe(screen)
        assert "evil␛]2;approval-title␇" in screen  # where it comes from
        for widget in app.query("#approval Static"):
            _assert_safe(str(widget.render()))


async def test_the_tuis_session_export_has_no_raw_control_character(tmp_path: Path) -> None:
    from tuiapp.conversation.store import Store

    provider = ScriptedProvider([[TextDelta(f"Reply {OSC52} \x9b"), StreamEnd("end_turn")]])
    root = _project(tmp_path / "proj")
    with Store.open() as store:
        app = app_for(root, provider=provider, store=store)
        async with app.run_test(size=(120, 40)) as pilot:
            await send(pilot, f"hi {OSC2}")
            await wait_idle(pilot)
            app.action_export_session()
            target = root / f"kep-session-{app.chat.session_id}.md"
            await until(pilot, target.exists, what="the export")
    text = target.read_text(encoding="utf-8")
    assert not UNSAFE.search(text)
    assert "Reply ␛]52;c;ZWNobyBwd25lZA==␇" in text and "hi ␛]2;pwned␛\\" in text


async def test_the_approval_panel_shows_bidi_controls_as_markers(tmp_path: Path) -> None:
    """Trojan Source: what the user approves is what runs. An override in an argument, a
    direction mark in the tool's file name, an isolate in a called name: each is a visible
    ⟨U+…⟩ marker, never a reordering of what is shown."""
    from tui_helpers import wait_approval

    root = tmp_path / "proj"
    (root / "prompts" / "functions").mkdir(parents=True)
    write_tool(root / "prompts" / "functions" / "evil\u200f", EVIL_NAME)
    (root / "kep.toml").write_text("[tools]\nbuiltins = false\n")  # a project tool: asked
    provider = ScriptedProvider([
        [ToolCall("c1", "evil", {"path": "/tmp/x\u202egpj.txt"}),
         ToolCall("c2", "ghost\u2066name\u2069", {}), StreamEnd("tool_use")],
        [TextDelta("ok"), StreamEnd("end_turn")]])
    app = app_for(root, provider=provider)
    async with app.run_test(size=(120, 40)) as pilot:
        await send(pilot, "go")
        await wait_approval(pilot)
        await pilot.pause(0.1)
        screen = _screen(pilot)
        bad = re.search("[\u202a-\u202e\u2066-\u2069\u200e\u200f]", screen)
        assert not bad, screen[max(0, bad.start() - 300):bad.start() + 50]
        assert "/tmp/x⟨U+202E⟩gpj.txt" in screen  # the argument, as it will run
        assert "evil⟨U+200F⟩" in screen  # where it comes from
        assert "ghost⟨U+2066⟩name⟨U+2069⟩" in screen  # the unknown tool's block
