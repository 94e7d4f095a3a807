"""Live tool panes: one tab per tool call, the newest active.

The app feeds core events to `ToolPanes.handle(event)` (attributes down); the panes post
`ToolPanes.CancelRequested(call_id)` when the user cancels the running tool (messages up).
Each pane shows the call's name and arguments, a status line, and stdout/stderr as they
stream, keeping the last `max_lines` lines; `o` opens the whole spooled output.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.content import Content
from textual.css.query import NoMatches
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, Static, TabbedContent, TabPane

from tuiapp.security.display import printable, printable_line
from tuiapp.ui.widgets.output_log import OutputLog
from tuiapp.vocab.events import (
    Event,
    ToolCallDecided,
    ToolCallQueued,
    ToolCallRequested,
    ToolCallStarted,
    ToolFinished,
    ToolOutput,
)

MAX_PANES = 40  # finished panes beyond this are closed, oldest first (memory stays bounded)
ARGS_SHOWN = 400  # characters of the arguments shown in a pane header

ICONS = {"pending": "⌛", "queued": "⌛", "running": "⌛", "ok": "✔", "failed": "✗",
         "timed_out": "⏱", "cancelled": "⊘", "denied": "⊘"}
LABELS = {"timed_out": "timed out"}
CANCELLABLE = ("running", "queued")
LIVE_PANES = 16  # unfinished calls with a pane; calls requested past this get none
STYLES = {"ok": "$text-success", "failed": "$text-error", "timed_out": "$text-warning",
          "cancelled": "$text-warning", "denied": "$text-warning"}
FINISHED = frozenset({"ok", "failed", "timed_out", "cancelled", "denied"})


def format_duration(ms: int) -> str:
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, seconds = divmod(round(ms / 1000), 60)
    return f"{minutes}m {seconds:02d}s"


def event_call_id(event: Event) -> str | None:
    call = getattr(event, "call", None)
    return call.id if call is not None else getattr(event, "call_id", None)


def status_text(status: str, exit_code: int | None = None, duration_ms: int | None = None) -> str:
    """The status line: ⌛ running → ✔ ok / ✗ failed (exit N) / ⏱ timed out / ⊘ cancelled."""
    text = f"{ICONS.get(status, '?')} {LABELS.get(status, status)}"
    if status == "failed" and exit_code is not None:
        text += f" (exit {exit_code})"
    if duration_ms is not None and status in FINISHED and status != "denied":
        text += f" · {format_duration(duration_ms)}"
    return text


@dataclass
class CallState:
    call_id: str
    name: str
    status: str = "pending"
    exit_code: int | None = None
    duration_ms: int | None = None
    spool_path: str = ""
    truncated: bool = False


class ToolPane(TabPane):
    """One tool call: header, status line, streamed output, buttons."""

    def __init__(self, state: CallState, args: Content, max_lines: int, pane_id: str) -> None:
        self.state = state
        self.dropped_shown = False
        self._args = args
        self.output = OutputLog(max_lines, classes="tool-pane--output")
        super().__init__(self._tab_label(), id=pane_id, classes="tool-pane")

    def _tab_label(self) -> Content:
        # Content, not str: a tab reads a str label as markup (the name is foreign).
        return Content(f"{ICONS.get(self.state.status, '?')} {printable_line(self.state.name)}")

    def compose(self) -> ComposeResult:
        yield Static(self._args, classes="tool-pane--args", markup=False)
        yield Static(self._status_content(), classes="tool-pane--status")
        yield self.output
        with Horizontal(classes="tool-pane--buttons"):
            yield Button(Content("Cancel (c)"), classes="tool-pane--cancel", compact=True,
                         variant="error", disabled=self.state.status not in CANCELLABLE)
            yield Button(Content("Full output (o)"), classes="tool-pane--open", compact=True)

    def _status_content(self) -> Content:
        s = self.state
        text = status_text(s.status, s.exit_code, s.duration_ms)
        style = STYLES.get(s.status, "$text-accent")
        parts: list[str | tuple[str, str]] = [(text, f"bold {style}")]
        if s.truncated:
            parts.append(("  result truncated for the model", "$text-muted"))
        if self.output.dropped:
            parts.append((f"  last {self.output.line_count} lines shown", "$text-muted"))
        return Content.assemble(*parts)

    def refresh_status(self) -> None:
        """Re-render the status line, tab label and cancel button after a state change."""
        status, cancel = self.query(".tool-pane--status"), self.query(".tool-pane--cancel")
        if not (self.is_mounted and status and cancel):
            return  # not composed yet, or being torn down by a session switch
        cast(Static, status.first()).update(self._status_content())
        cast(Button, cancel.first()).disabled = self.state.status not in CANCELLABLE
        if self.id:
            try:
                self.query_ancestor(TabbedContent).get_tab(self.id).label = self._tab_label()
            except NoMatches:
                pass  # the tab is still being added; _activate() labels it


    def show_edited(self, arguments: dict[str, Any]) -> None:
        """The user edited the arguments: the header shows what really runs."""
        self._args = _args_content_of(self.state.name, arguments, edited=True)
        for header in self.query(".tool-pane--args"):
            cast(Static, header).update(self._args)


def _args_content(event: ToolCallRequested) -> Content:
    call = event.call
    if call.arguments_error:
        return Content.assemble((printable_line(call.name), "bold"), " ",
                                (printable(call.arguments_error), "$text-error"))
    return _args_content_of(call.name, call.arguments)


def _args_content_of(name: str, arguments: dict[str, Any], edited: bool = False) -> Content:
    text = json.dumps(arguments, ensure_ascii=False)
    if len(text) > ARGS_SHOWN:
        text = text[:ARGS_SHOWN] + "…"
    mark = ("edited by you ", "bold $text-warning") if edited else ""
    return Content.assemble((printable_line(name), "bold"), " ", mark,
                            (printable_line(text), "$text-muted"))


class ToolPanes(Widget):
    """The right-hand stack of tool panes (tabs), fed with core tool events."""

    DEFAULT_CSS = """
    ToolPanes {
        width: 1fr;
        height: 1fr;
        & > TabbedContent { height: 1fr; }
        & ContentSwitcher { height: 1fr; }
        & .tool-pane { height: 1fr; padding: 0 1; }
        & .tool-pane--args { max-height: 4; overflow: hidden; }
        & .tool-pane--status { height: 1; }
        & .tool-pane--output { height: 1fr; }
        & .tool-pane--buttons { height: 1; margin-top: 1; }
        & .tool-pane--buttons Button { margin-right: 1; }
        & .tool-panes--empty { color: $text-muted; padding: 1 1; }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "cancel", "Cancel tool", id="pane_cancel"),
        Binding("o", "open_output", "Full output", id="pane_open_output"),
    ]

    class CancelRequested(Message):
        """The user asked to cancel the running call `call_id`."""

        def __init__(self, call_id: str) -> None:
            self.call_id = call_id
            super().__init__()

    class OutputRequested(Message):
        """The user asked to read a pane's whole output (the app opens the viewer screen)."""

        def __init__(self, name: str, spool_path: str, kept: list[str] | None,
                     running: bool) -> None:
            self.name, self.spool_path, self.kept, self.running = name, spool_path, kept, running
            super().__init__()

    def __init__(self, max_lines: int, *, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.max_lines = max_lines
        self._panes: dict[str, ToolPane] = {}  # call_id → pane, oldest first
        self._pending: list[Event] = []  # events that arrived before mount
        self._ready = False  # on_mount has run (is_mounted turns True a little later)
        self._deferred: dict[str, str] = {}  # calls of a flood, shown without a pane
        self._counter = 0

    def compose(self) -> ComposeResult:
        yield Static("No tool calls yet.", classes="tool-panes--empty")
        yield TabbedContent()

    def on_mount(self) -> None:
        self.query_one(TabbedContent).display = False
        pending, self._pending = self._pending, []
        self._ready = True
        for event in pending:
            self.handle(event)

    # ---- events down -------------------------------------------------------------------

    def handle(self, event: Event) -> bool:
        """Apply one core event; returns False for events the panes do not show."""
        if self._ready and not self.is_attached:
            return False  # replaced by a new session's panes: nothing to show here any more
        if not self._ready:
            if isinstance(event, ToolCallRequested | ToolCallStarted | ToolOutput | ToolFinished
                          | ToolCallDecided | ToolCallQueued):
                self._pending.append(event)
                return True
            return False
        if isinstance(event, ToolOutput) and event.call_id not in self._deferred:
            pane = self._panes.get(event.call_id) or self._open(event.call_id, event.call_id)
            pane.output.write(event.text, event.stream)
            if pane.output.dropped and not pane.dropped_shown:
                pane.dropped_shown = True  # say once that older lines fell off
                pane.refresh_status()
            return True
        if isinstance(event, ToolCallRequested):
            old = self._panes.get(event.call.id)
            if old is not None and old.state.status in FINISHED:
                # Some models reuse call ids across turns: the newest call gets its own pane.
                del self._panes[event.call.id]
                self._panes[f"{event.call.id} (earlier {id(old)})"] = old
            if self._live_panes() >= LIVE_PANES:
                self._deferred[event.call.id] = event.call.name
                return True
            self._open(event.call.id, event.call.name, _args_content(event))
            return True
        if isinstance(event, ToolCallQueued):
            if pane := self._panes.get(event.call_id):
                pane.state.status = "queued"
                pane.refresh_status()
            return True
        if event_call_id(event) in self._deferred:
            # A call of a flood: no pane (opening and closing tabs per call would stall the
            # screen); the transcript counts it, its output is in its spool file.
            if isinstance(event, ToolFinished):
                del self._deferred[event.call_id]
            return True
        if isinstance(event, ToolCallStarted):
            pane = self._panes.get(event.call_id) or self._open(event.call_id, event.name)
            pane.state.status = "running"
            pane.state.spool_path = event.spool_path
            pane.refresh_status()
            return True
        if isinstance(event, ToolCallDecided):
            pane = self._panes.get(event.call_id)
            if pane and event.edited_arguments is not None:
                pane.show_edited(event.edited_arguments)
            if pane and (event.decision == "deny" or event.approved is False):
                pane.state.status = "denied"
                pane.refresh_status()
            return pane is not None
        if isinstance(event, ToolFinished):
            pane = self._panes.get(event.call_id) or self._open(event.call_id, event.name)
            s = pane.state
            s.status, s.exit_code, s.duration_ms = event.status, event.exit_code, event.duration_ms
            s.truncated = event.truncated
            s.spool_path = event.spool_path or s.spool_path
            for image in event.images:  # not in any stream: the pane names what was sent
                pane.output.write(image.placeholder() + "\n", "stdout")
            pane.refresh_status()
            return True
        return False

    def _open(self, call_id: str, name: str, args: Content | None = None) -> ToolPane:
        existing = self._panes.get(call_id)
        if existing:
            return existing
        self._counter += 1
        pane = ToolPane(CallState(call_id, name),
                        args or Content.assemble((printable_line(name), "bold")),
                        self.max_lines, f"tool-pane-{self._counter}")
        self._panes[call_id] = pane
        tabbed = self.query_one(TabbedContent)
        tabbed.display = True
        for empty in self.query(".tool-panes--empty"):  # (gone while panes are torn down)
            empty.display = False
        added = tabbed.add_pane(pane)
        self.call_later(self._activate, added, pane)
        self._close_old_panes()
        return pane

    async def _activate(self, added: object, pane: ToolPane) -> None:
        try:
            await added  # type: ignore[misc]
        except ValueError:
            # Textual re-activates a tab that a session switch removed meanwhile: these
            # panes (or that pane) are gone, and nothing is left to show.
            return
        if not pane.is_attached:
            return
        pane.refresh_status()  # events may have arrived while it was being mounted
        if pane.id and pane is self.newest():
            # The newest call becomes the visible tab; keyboard focus stays where it is.
            self.query_one(TabbedContent).active = pane.id

    def _live_panes(self) -> int:
        return sum(1 for p in self._panes.values() if p.state.status not in FINISHED)

    def _close_old_panes(self) -> None:
        excess = len(self._panes) - MAX_PANES
        if excess <= 0:
            return
        tabbed = self.query_one(TabbedContent)
        for call_id, pane in list(self._panes.items()):
            if excess <= 0:
                break
            if pane.state.status in FINISHED and pane.id:
                del self._panes[call_id]
                tabbed.remove_pane(pane.id)
                excess -= 1

    # ---- queries -----------------------------------------------------------------------

    def pane(self, call_id: str) -> ToolPane | None:
        return self._panes.get(call_id)

    def newest(self) -> ToolPane | None:
        return next(reversed(self._panes.values()), None)

    def active_pane(self) -> ToolPane | None:
        if not self.is_mounted:
            return None
        active = self.query_one(TabbedContent).active_pane
        return active if isinstance(active, ToolPane) else None

    # ---- actions up --------------------------------------------------------------------

    def action_cancel(self) -> None:
        """Cancel the running call in the visible pane."""
        pane = self.active_pane()
        if pane is None or pane.state.status not in CANCELLABLE:
            self.app.bell()
            return
        self.post_message(self.CancelRequested(pane.state.call_id))

    def action_open_output(self) -> None:
        """Open the visible pane's full spooled output in a scrollable viewer."""
        pane = self.active_pane()
        if pane is None:
            self.app.bell()
            return
        kept = None if pane.state.spool_path else pane.output.lines()
        self.post_message(self.OutputRequested(pane.state.name, pane.state.spool_path, kept,
                                               pane.state.status not in FINISHED))

    @on(Button.Pressed, ".tool-pane--cancel")
    def _cancel_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_cancel()

    @on(Button.Pressed, ".tool-pane--open")
    def _open_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_open_output()
