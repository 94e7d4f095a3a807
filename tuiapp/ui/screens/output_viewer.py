"""The full output of one tool call, read from its spool file.

Only the tail of a big spool is read (TAIL_BYTES), in a thread, so a 50 MB file neither freezes
the UI nor fills memory; a note says how much is shown and where the whole file is.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from tuiapp.tools.runner import STDERR_MARK  # how a spool file marks stderr lines
from tuiapp.ui.literal import say
from tuiapp.ui.widgets.output_log import OutputLog, Stream
from tuiapp.ui.widgets.tool_panes import ToolPanes

TAIL_BYTES = 4 * 1024 * 1024


def read_tail(path: Path, limit: int = TAIL_BYTES) -> tuple[str, int]:
    """The last `limit` bytes of `path` (starting at a line boundary) and the file size."""
    with path.open("rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            f.seek(size - limit)
            data = f.read(limit)
            newline = data.find(b"\n")
            if 0 <= newline < len(data) - 1:
                data = data[newline + 1:]
        else:
            data = f.read()
    return data.decode("utf-8", errors="replace"), size


def split_streams(text: str) -> list[tuple[Stream, str]]:
    """The spool marks stderr lines with "[stderr] ": give them back their own stream."""
    if STDERR_MARK not in text:
        return [("stdout", text)]
    runs: list[tuple[Stream, list[str]]] = []
    for line in text.splitlines(keepends=True):
        stream: Stream = "stdout"
        if line.startswith(STDERR_MARK):
            stream, line = "stderr", line[len(STDERR_MARK):]
        if runs and runs[-1][0] == stream:
            runs[-1][1].append(line)
        else:
            runs.append((stream, [line]))
    return [(stream, "".join(lines)) for stream, lines in runs]


def _mb(n: int) -> str:
    if n < 1024:
        return f"{n} byte{'s' * (n != 1)}"  # "0 KB" read as "nothing" for a short output
    return f"{n / (1024 * 1024):.1f} MB" if n >= 1024 * 1024 else f"{n / 1024:.0f} KB"


class OutputViewer(ModalScreen[None]):
    """Scrollable full output; Esc or q closes, r reloads (the tool may still be running)."""

    DEFAULT_CSS = """
    OutputViewer { align: center middle; }
    OutputViewer > Vertical {
        width: 95%; height: 90%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    OutputViewer .viewer--note { color: $text-muted; height: auto; }
    OutputViewer OutputLog { height: 1fr; }
    OutputViewer Horizontal { height: 1; }
    OutputViewer Button { margin-right: 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="viewer_close"),
        Binding("r", "reload", "Reload", id="viewer_reload"),
    ]

    def __init__(self, name: str, spool_path: str, kept_lines: list[str] | None = None,
                 *, running: bool = False) -> None:
        super().__init__()
        self.tool_name = name
        self.spool_path = spool_path
        self.kept_lines = kept_lines
        self.running = running

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = say("Full output · {}", self.tool_name)
            yield Static("Loading…", classes="viewer--note", markup=False)
            yield OutputLog(None)
            with Horizontal():
                yield Button(Content("Close (Esc)"), id="close", compact=True)
                yield Button(Content("Reload (r)"), id="reload", compact=True)

    def on_mount(self) -> None:
        self.query_one(OutputLog).focus()
        self.action_reload()

    def action_close(self) -> None:
        self.dismiss(None)

    def action_reload(self) -> None:
        if not self.spool_path:
            lines = self.kept_lines or []
            self._show("\n".join(lines), f"No spool file for this call; {len(lines)} lines "
                                         "kept in the pane.")
            return
        self._load(Path(self.spool_path))

    @work(thread=True, exclusive=True, group="output-viewer")
    def _load(self, path: Path) -> None:
        try:
            text, size = read_tail(path)
        except OSError as e:
            self.app.call_from_thread(self._show, "", f"Cannot read {path}: {e.strerror}")
            return
        if size > TAIL_BYTES:
            note = f"Showing the last {_mb(TAIL_BYTES)} of {_mb(size)}. Whole file: {path}"
        else:
            note = f"{_mb(size)} · {path}"
        if self.running:
            note += "  (still running: r reloads)"
        self.app.call_from_thread(self._show, text, note)

    def _show(self, text: str, note: str) -> None:
        log = self.query_one(OutputLog)
        log.clear()
        for stream, chunk in split_streams(text):
            log.write(chunk, stream)
        self.query_one(".viewer--note", Static).update(note)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "close":
            self.action_close()
        elif event.button.id == "reload":
            self.action_reload()


class OpensOutputViewer:
    """Mixed into an App: the tool panes ask to read a pane's whole output (a widget never
    pushes a screen itself), and the app opens the viewer."""

    def on_tool_panes_output_requested(self, message: ToolPanes.OutputRequested) -> None:
        self.push_screen(  # type: ignore[attr-defined]
            OutputViewer(message.name, message.spool_path, message.kept,
                         running=message.running))
