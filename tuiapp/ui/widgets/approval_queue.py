"""The calls of one model reply, as the approval panel lists them: every call with its
arguments (as edited, when the user edited them) and where it really stands (asking, waiting
for an answer, to be allowed or denied by a rule when its turn comes, allowed, denied), so an
answer that covers several calls (Y / N) never covers one the user has not seen."""

from __future__ import annotations

import json
from collections.abc import Sequence

from textual.content import Content

from tuiapp.security.display import printable_line
from tuiapp.vocab.events import ToolCallDecided, ToolCallForeseen, ToolFinished
from tuiapp.vocab.messages import ToolCall

ARGS_SHOWN = 200  # characters of a call's arguments in the list (the full JSON is above it)
# A call not reached yet, by what the rules will say when it is.
WAITING = {"ask": "waiting for you", "allow": "next: a rule allows it",
           "deny": "next: a rule denies it"}


class ReplyCalls:
    """The calls of the latest reply and what has become of each one."""

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self.outcome: dict[str, str] = {}  # call id → "allowed by you", "denied by rule" …
        self.foreseen: dict[str, str] = {}  # call id → what the rules will say: allow|ask|deny
        self.edited: dict[str, dict] = {}  # call id → the arguments as the user edited them

    def start(self, calls: Sequence[ToolCall]) -> None:
        self.calls = list(calls)
        self.outcome, self.foreseen, self.edited = {}, {}, {}

    def foresee(self, event: ToolCallForeseen) -> bool:
        if not self.has(event.call_id):
            return False
        self.foreseen[event.call_id] = event.decision
        return True

    def clear(self) -> None:
        self.start(())

    def has(self, call_id: str) -> bool:
        return any(c.id == call_id for c in self.calls)

    def settle(self, event: ToolCallDecided | ToolFinished) -> bool:
        """Record an event about one of the calls. True when it was one of them."""
        if not self.has(event.call_id):
            return False
        if isinstance(event, ToolCallDecided):
            if event.edited_arguments is not None:
                self.edited[event.call_id] = event.edited_arguments
            if event.decision == "ask" and event.approved is None:
                return True  # (asked again: not settled yet)
            allowed = event.approved if event.approved is not None else (
                event.decision == "allow")
            by = "you" if event.decision == "ask" or event.approved is False else "rule"
            self.outcome[event.call_id] = f"{'allowed' if allowed else 'denied'} by {by}"
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
            state = "asking" if here else self.outcome.get(call.id) or WAITING[
                self.foreseen.get(call.id, "ask")]
            style = "bold" if here else ("dim" if call.id in self.outcome else "")
            edited = self.edited.get(call.id)
            rows.append(Content.assemble(
                ("▶ " if here else "  ", "$accent"), (f"{i}/{n} ", "dim"),
                (printable_line(call.name), style or "bold"), " ",
                ("edited by you " if edited is not None else "", "$text-warning"),
                (_arguments(call, edited), style),
                ("  " + state, "$text-warning" if here else "dim")))
        return Content("\n").join(rows)

    def index(self, call_id: str) -> int:
        return next((i for i, c in enumerate(self.calls) if c.id == call_id), 0)


def _arguments(call: ToolCall, edited: dict | None = None) -> str:
    # (C0 controls come out escaped)
    text = json.dumps(call.arguments if edited is None else edited, ensure_ascii=False)
    if len(text) > ARGS_SHOWN:
        text = f"{text[:ARGS_SHOWN]}… ({len(text) - ARGS_SHOWN:,} more characters)"
    return printable_line(text)  # C1 controls, DEL and bidi controls do not
