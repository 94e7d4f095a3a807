"""The calls of one model reply, as the approval panel lists them: every call with its
arguments and where it stands (asking, waiting, allowed, denied), so an answer that covers
several calls (Y / N) never covers one the user has not seen."""

from __future__ import annotations

import json
from collections.abc import Sequence

from textual.content import Content

from tuiapp.security.display import printable_line
from tuiapp.vocab.events import ToolCallDecided, ToolFinished
from tuiapp.vocab.messages import ToolCall

ARGS_SHOWN = 200  # characters of a call's arguments in the list (the full JSON is above it)


class ReplyCalls:
    """The calls of the latest reply and what has become of each one."""

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self.outcome: dict[str, str] = {}  # call id → "allowed by you", "denied by rule" …

    def start(self, calls: Sequence[ToolCall]) -> None:
        self.calls = list(calls)
        self.outcome = {}

    def clear(self) -> None:
        self.start(())

    def has(self, call_id: str) -> bool:
        return any(c.id == call_id for c in self.calls)

    def settle(self, event: ToolCallDecided | ToolFinished) -> bool:
        """Record an event about one of the calls. True when it was one of them."""
        if not self.has(event.call_id):
            return False
        if isinstance(event, ToolCallDecided):
            verb = "allowed" if event.approved or event.decision == "allow" else "denied"
            by = "you" if event.decision == "ask" else "rule"
            self.outcome[event.call_id] = f"{verb} by {by}"
        else:  # refused before any decision (unknown tool, bad arguments), or cancelled
            self.outcome.setdefault(event.call_id, "not run" if event.status != "ok" else "ran")
        return True

    def unsettled(self) -> list[ToolCall]:
        return [c for c in self.calls if c.id not in self.outcome]

    def lines(self, current: str | None) -> Content:
        n = len(self.calls)
        rows: list[Content] = []
        for i, call in enumerate(self.calls, 1):
            here = call.id == current
            state = self.outcome.get(call.id) or ("asking" if here else "waiting")
            style = "bold" if here else ("dim" if call.id in self.outcome else "")
            rows.append(Content.assemble(
                ("▶ " if here else "  ", "$accent"), (f"{i}/{n} ", "dim"),
                (printable_line(call.name), style or "bold"), " ", (_arguments(call), style),
                ("  " + state, "$text-warning" if here else "dim")))
        return Content("\n").join(rows)

    def index(self, call_id: str) -> int:
        return next((i for i, c in enumerate(self.calls) if c.id == call_id), 0)


def _arguments(call: ToolCall) -> str:
    text = json.dumps(call.arguments, ensure_ascii=False)  # (C0 controls come out escaped)
    if len(text) > ARGS_SHOWN:
        text = f"{text[:ARGS_SHOWN]}… ({len(text) - ARGS_SHOWN:,} more characters)"
    return printable_line(text)  # C1 controls, DEL and bidi controls do not
