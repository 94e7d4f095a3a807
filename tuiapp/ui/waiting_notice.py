"""KepApp's nudge (a mixin): when a question has waited `[ui] notify_after` seconds (5) and
the terminal is not focused or nobody has touched a key or the mouse for that long, kep rings
the bell (`notify_bell`) and sends a desktop notification (`notify_desktop`): OSC 9 or OSC
777 through the terminal where it is known to show them, else `notify-send` when present.
Once per question; the text carries only the tool's name, made printable and short."""

from __future__ import annotations

import os
import shutil
import time
from functools import partial
from typing import TYPE_CHECKING

from textual import events
from textual.app import App

from tuiapp.security.display import desktop_notification, printable_line
from tuiapp.ui.messages import ApprovalRequested

if TYPE_CHECKING:
    from tuiapp.project.workspace import Workspace
    from tuiapp.ui.widgets.approval import ApprovalPanel

TEXT_CAP = 80
# Terminals known to show OSC 9 (iTerm2, WezTerm, Ghostty, Windows Terminal, kitty) and OSC 777
# (VTE terminals, foot, urxvt with the notify extension).
OSC9_PROGRAMS = ("iTerm.app", "WezTerm", "ghostty", "vscode")


def desktop_route(setting: str, env: dict[str, str] | os._Environ[str]) -> str:
    """Which desktop notification `setting` ("auto" …) means in this environment: "osc9",
    "osc777", "notify-send" or "off"."""
    if setting != "auto":
        return setting
    if env.get("TMUX") or env.get("STY"):  # a multiplexer would swallow the sequence
        pass
    elif env.get("TERM_PROGRAM") in OSC9_PROGRAMS or env.get("WT_SESSION") or (
            "kitty" in env.get("TERM", "")):
        return "osc9"
    elif env.get("VTE_VERSION") or env.get("TERM", "").startswith(("foot", "rxvt")):
        return "osc777"
    if shutil.which("notify-send") and (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        return "notify-send"
    return "off"


def sequence(route: str, text: str) -> str:
    """The OSC sequence for `text` (made printable there: no ESC or BEL can end it early)."""
    return desktop_notification(route, text)


class WaitingNotice(App[int]):
    """Mixed into KepApp, which provides the workspace and the approval panel."""

    ws: Workspace
    approval: ApprovalPanel
    _last_input: float = 0.0
    nudges: list[str]  # what was sent (tests read it)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.MouseDown | events.MouseScrollDown
                      | events.MouseScrollUp):
            self._last_input = time.monotonic()
        await super().on_event(event)

    def on_approval_requested(self, message: ApprovalRequested) -> None:
        after = self.ws.config.notify.after
        if after > 0:
            call = message.request.call
            self.set_timer(after, lambda: self._nudge(call.id, call.name))

    def _nudge(self, call_id: str, tool: str) -> None:
        current = getattr(self.approval, "current", None)
        if current is None or current.call.id != call_id:
            return  # answered meanwhile (or another question is showing)
        settings = self.ws.config.notify
        idle = time.monotonic() - self._last_input >= settings.after
        if self.app_focus and not idle:
            return  # the user is here and busy: the panel is enough
        text = printable_line(f"kep: {tool} waits for your approval")[:TEXT_CAP]
        if not hasattr(self, "nudges"):
            self.nudges = []
        if settings.bell:
            self.bell()
            self.nudges.append("bell")
        route = desktop_route(settings.desktop, os.environ)
        if route in ("osc9", "osc777"):
            driver = getattr(self, "_driver", None)
            if driver is not None:
                driver.write(sequence(route, text))
            self.nudges.append(route)
        elif route == "notify-send":
            self.run_worker(partial(_notify_send, text), group="nudge", exit_on_error=False)
            self.nudges.append(route)


async def _notify_send(text: str) -> None:
    from tuiapp.security import secrets
    from tuiapp.tools.proc import run_collect

    try:  # run the way tools run: own process group, killed on timeout, no secrets
        await run_collect(["notify-send", "--app-name=kep", "kep", text], timeout=5,
                          cwd=None, env=secrets.child_env(None))
    except OSError:
        pass  # gone since it was found: the bell still rang
