"""Shared set-up for the TUI Pilot tests: a project with tools of its own, the app, waiting.

The project's tools are not built-ins, so the default policy asks about them (built-ins
like readfile are allowed by default). `shout` leaves a marker file when it runs, so a test
can tell "asked" from "ran".
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from conftest import write_tool
from textual.pilot import Pilot

from tuiapp.project import config as project_config
from tuiapp.project.workspace import Workspace
from tuiapp.providers.base import Provider, StreamItem
from tuiapp.settings.config_types import ProviderConfig
from tuiapp.ui.app import KepApp, make_app
from tuiapp.ui.widgets.approval import ApprovalPanel
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.ui.widgets.status_footer import StatusFooter
from tuiapp.ui.widgets.transcript import Transcript
from tuiapp.vocab.messages import Message
from tuiapp.vocab.tool_specs import ToolSpec

SIZE = (120, 40)

SHOUT = r'''#!/usr/bin/env python3
"""shout: upper-case a file's content. Leaves shout.ran behind when it runs."""
import json, pathlib, sys
if sys.argv[1:] == ["--list-functions"]:
    print(json.dumps([{"name": "shout", "description": "Upper-case a file's content",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                       "required": ["path"]}}]))
    sys.exit(0)
args = json.load(sys.stdin)
with open("shout.ran", "a") as f:
    f.write(args["path"] + "\n")
print(pathlib.Path(args["path"]).read_text().upper(), end="")
'''

SLEEPY = r'''#!/usr/bin/env python3
"""sleepy: writes its pid to sleepy.pid, then sleeps (a tool to cancel)."""
import json, os, sys, time
if sys.argv[1:] == ["--list-functions"]:
    print(json.dumps([{"name": "sleepy", "description": "Sleep a while",
        "parameters": {"type": "object", "properties": {"seconds": {"type": "number"}}}}]))
    sys.exit(0)
json.load(sys.stdin)
print("going to sleep", flush=True)
with open("sleepy.pid", "w") as f:
    f.write(str(os.getpid()))
time.sleep(30)
'''


def make_project(root: Path) -> Path:
    (root / "prompts" / "functions").mkdir(parents=True, exist_ok=True)
    write_tool(root / "prompts" / "functions" / "shout", SHOUT)
    write_tool(root / "prompts" / "functions" / "sleepy", SLEEPY)
    (root / "notes.txt").write_text("hello from notes\n")
    (root / "other.txt").write_text("other file\n")
    (root / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    return root


def app_for(root: Path, **kwargs: Any) -> KepApp:
    kwargs.setdefault("model", "offline")
    return make_app(Workspace(project_config.load(root)), **kwargs)


async def until(pilot: Pilot[Any], check: Callable[[], object], timeout: float = 15.0,
                what: str = "condition") -> None:
    """Let the app run until `check()` is true (a wait, not a timing assertion)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.02)


async def send(pilot: Pilot[Any], text: str) -> None:
    """Put `text` in the prompt and press Enter. (Pilot spends ~60 ms per key it presses:
    typing is covered by the history test and the pty test.)"""
    app = pilot.app
    assert isinstance(app, KepApp)
    await until(pilot, app.tools_ready.is_set, what="tools")
    prompt = app.query_one(PromptInput)
    prompt.load_text(text)
    prompt.focus()
    await pilot.press("enter")


def approval(app: KepApp) -> ApprovalPanel:
    return app.approval  # mounted after the first frame (Lazy)


async def wait_approval(pilot: Pilot[Any], *, armed: bool = True) -> ApprovalPanel:
    """Until a call waits for an answer; `armed`: and has been on screen long enough for
    keys to answer it (before that they go to the message box)."""
    panel = approval(pilot.app)  # type: ignore[arg-type]
    await until(pilot, lambda: panel.is_mounted and panel.display and panel.current is not None
                and (panel.armed or not armed), what="approval")
    return panel


async def wait_idle(pilot: Pilot[Any]) -> None:
    """Until the turn has ended and every reply is drawn (a reply finishes drawing in its
    own time, after the turn)."""
    app = pilot.app
    assert isinstance(app, KepApp)
    await until(pilot, lambda: not app.busy and app.query_one(StatusFooter).state
                in ("idle", "error") and app.query_one(Transcript).drawn,
                what="the turn to end")


def tool_messages(app: KepApp) -> list[Message]:
    return [m for m in app.chat.history if m.role == "tool"]


class ScriptedProvider(Provider):
    """A provider that plays back one list of stream items per request."""

    def __init__(self, steps: Sequence[Sequence[StreamItem | Exception]]) -> None:
        super().__init__(ProviderConfig("scripted", "chat"), "scripted")
        self.steps = [list(s) for s in steps]
        self.requests: list[list[Message]] = []

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec],
                     system: str | None) -> AsyncIterator[StreamItem]:
        self.requests.append(list(messages))
        for item in self.steps.pop(0):
            if isinstance(item, Exception):
                raise item
            await asyncio.sleep(0)
            yield item
