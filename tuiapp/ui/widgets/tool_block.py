"""A tool call in the transcript: ⌛ while asked about or running, then ✔ ✗ ⏱ or ⊘, with
exit code, duration, who decided and why. The live output is in the side pane."""

from __future__ import annotations

import json
import time
from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Static

from tuiapp.security.display import printable_line
from tuiapp.vocab.events import ToolCallDecided, ToolFinished
from tuiapp.vocab.messages import ToolCall

ICONS = {"requested": "⌛", "asking": "⌛", "queued": "⌛", "running": "⌛", "ok": "✔",
         "failed": "✗", "timed_out": "⏱", "cancelled": "⊘", "denied": "⊘", "interrupted": "⊘"}
LABELS = {"requested": "", "asking": "waiting for you", "queued": "queued",
          "running": "running", "ok": "", "failed": "failed", "timed_out": "timed out",
          "cancelled": "cancelled", "denied": "denied", "interrupted": "interrupted"}
ARGS_PREVIEW = 200


def compact_arguments(arguments: dict[str, Any]) -> str:
    text = printable_line(json.dumps(arguments, ensure_ascii=False, separators=(", ", ": ")))
    return text if len(text) <= ARGS_PREVIEW else text[: ARGS_PREVIEW - 1] + "…"


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


class ToolCallBlock(Vertical):
    """One call's story in two lines. The app feeds it events; it never reaches into the core."""

    status: reactive[str] = reactive("requested")

    def __init__(self, call: ToolCall, source: str = "") -> None:
        super().__init__(classes="tool-block")
        self.call = call
        self.source = source
        self._meta = ""
        self._detail = ""
        self._started = 0.0
        self._ticker: Timer | None = None
        self._edited: dict[str, Any] | None = None  # arguments the user edited
        self._composed = False  # children exist (is_mounted is still False in on_mount)

    def compose(self) -> ComposeResult:
        with Horizontal(classes="tool-head"):
            yield Static(ICONS["requested"], classes="tool-icon")
            yield Static(Content.assemble((printable_line(self.call.name), "bold"), "  ",
                                          (compact_arguments(self.call.arguments), "dim")),
                         classes="tool-title")
            yield Static("", classes="tool-meta")
        yield Static("", classes="tool-detail")

    def watch_status(self, old: str, new: str) -> None:
        self.remove_class(f"-{old}")
        self.add_class(f"-{new}")
        if self._composed:
            self.query_one(".tool-icon", Static).update(ICONS.get(new, "?"))
            self._refresh_text()

    def on_mount(self) -> None:
        # Events may have arrived before the block was mounted: draw the state they left.
        self._composed = True
        self.add_class(f"-{self.status}")
        self.query_one(".tool-icon", Static).update(ICONS.get(self.status, "?"))
        self._refresh_text()

    def _refresh_text(self) -> None:
        if not self._composed:
            return  # on_mount draws it
        if self._edited is not None:
            self.query_one(".tool-title", Static).update(Content.assemble(
                (printable_line(self.call.name), "bold"), "  ",
                (compact_arguments(self._edited), "dim")))
        meta = self._meta or LABELS.get(self.status, "")
        self.query_one(".tool-meta", Static).update(meta)
        detail = self.query_one(".tool-detail", Static)
        detail.update(Content(printable_line(self._detail)))
        detail.display = bool(self._detail)

    # ---- lifecycle, in event order ------------------------------------------------------

    def asking(self, rule: str) -> None:
        self._detail = f"asked: {rule}"
        self.status = "asking"
        self._refresh_text()

    def decided(self, event: ToolCallDecided) -> None:
        if event.decision == "ask":
            if event.approved:
                edited = " with edited arguments" if event.edited_arguments is not None else ""
                self._detail = f"allowed by you{edited}"
            else:
                self._detail = "denied by you" + (f": {event.reason}" if event.reason else "")
        else:
            self._detail = f"{'allowed' if event.decision == 'allow' else 'denied'}: {event.rule}"
        self._edited = event.edited_arguments
        self._refresh_text()

    def queued(self) -> None:
        """Approved, waiting for a free slot ([tools] max_parallel)."""
        self.status = "queued"
        self._refresh_text()

    def running(self) -> None:
        self._started = time.monotonic()
        self.status = "running"
        # Elapsed time while it runs: a frozen "running" looks like a hang.
        self._ticker = self.set_interval(0.5, self._tick)

    def _tick(self) -> None:
        self._meta = f"running {time.monotonic() - self._started:.1f} s"
        self._refresh_text()

    def finished(self, event: ToolFinished) -> None:
        if self._ticker is not None:
            self._ticker.stop()
        parts = []
        if event.exit_code is not None:
            parts.append(f"exit {event.exit_code}")
        if event.status != "denied":
            parts.append(_duration(event.duration_ms))
        if event.truncated:
            parts.append("output truncated")
        self._meta = " · ".join([LABELS[event.status], *parts] if LABELS.get(event.status)
                                else parts)
        if event.status in ("failed", "timed_out", "cancelled"):
            why = first_line(event.result)
            if why:
                self._detail = f"{self._detail} · {why}" if self._detail else why
        self.status = event.status
        self._refresh_text()

    def restore(self, status: str, exit_code: int | None, duration_ms: int | None,
                detail: str) -> None:
        """A call from a resumed session, drawn as it ended."""
        parts = [LABELS.get(status, status)] if LABELS.get(status) else []
        if exit_code is not None:
            parts.append(f"exit {exit_code}")
        if duration_ms is not None and status not in ("denied", "interrupted"):
            parts.append(_duration(duration_ms))
        self._meta, self._detail = " · ".join(parts), detail
        self.status = status if status in ICONS else "ok"


def _duration(ms: int) -> str:
    return f"{ms} ms" if ms < 1000 else f"{ms / 1000:.1f} s"
