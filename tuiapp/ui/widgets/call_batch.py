"""The tool calls of one reply beyond the first few, counted on one line instead of a block
each: a model asking for 500 calls must not put 500 blocks (thousands of widgets) into the
transcript, whose layout would then cost seconds per change. The line is redrawn at most
four times a second, however many events arrive."""

from __future__ import annotations

from collections import Counter

from textual.content import Content
from textual.widgets import Static

SHOWN = 16  # tool-call blocks drawn per reply; the rest are counted here
ORDER = ("requested", "asking", "queued", "running", "ok", "failed", "timed_out", "cancelled",
         "denied")
REDRAW = 0.25


class CallBatchLine(Static):
    def __init__(self) -> None:
        super().__init__("", classes="notice -info call-batch")
        self.status: dict[str, str] = {}
        self._due = False

    def __contains__(self, call_id: object) -> bool:
        return call_id in self.status

    def set(self, call_id: str, status: str) -> None:
        self.status[call_id] = status
        if not self._due and self.is_mounted:
            self._due = True
            self.set_timer(REDRAW, self._redraw)

    def on_mount(self) -> None:
        self._redraw()

    def _redraw(self) -> None:
        self._due = False
        counts = Counter(self.status.values())
        parts = [f"{counts[s]} {s.replace('_', ' ')}" for s in ORDER if counts[s]]
        self.update(Content(f"… and {len(self.status)} more tool calls in this reply: "
                            + " · ".join(parts)))
