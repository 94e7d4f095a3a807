"""The approval panel's keys: which key answers how, and the two guards against stray
typing. Keys in the first GUARD_SECONDS after a call is on screen were typed before the user
saw it: they go to the message box. The answers that write config (a, d) or cover several
calls (Y, N) run on a second press of the same key (or Enter) within CONFIRM_SECONDS."""

from __future__ import annotations

import time
from typing import Any, Protocol

from textual import events
from textual.message import Message
from textual.widgets import Button

from tuiapp.ui.messages import PendingApproval
from tuiapp.ui.widgets.approval_queue import ReplyCalls

# (key, label, action, variant). Labels stay short: the row must fit beside the tool panes.
BUTTONS = (("y", "allow", "allow", "success"), ("n", "deny", "deny", "error"),
           ("a", "always", "always_allow", "default"), ("d", "never", "always_deny", "default"),
           ("e", "edit", "edit", "default"), ("Y", "all", "allow_all", "default"),
           ("N", "none", "deny_all", "default"))
KEY_ACTIONS = {key: action for key, _, action, _ in BUTTONS}
CONFIRMED = {"always_allow", "always_deny", "allow_all", "deny_all"}  # need a second key
GUARD_SECONDS = 0.5  # keys this soon after a call is shown were not meant for it
CONFIRM_SECONDS = 3.0


class KeyButton(Button, can_focus=False):
    """A key's button: clicked, never focused (Enter on a focused "none" would deny all)."""


def fit_columns(widths: list[int], room: int) -> int:
    """How many grid columns of these cell widths fit in `room` cells (at least one)."""
    columns = len(widths)
    while columns > 1:
        if sum(max(widths[i::columns]) for i in range(columns)) <= room:
            break
        columns -= 1
    return columns


class ApprovalPanel(Protocol):
    """What the key handling reads and calls on the approval panel it is mixed into."""

    Typed: type[Message]
    Leave: type[Message]
    queue: list[PendingApproval]
    reply: ReplyCalls
    mode: str
    shown_at: float
    confirming: tuple[str, float] | None
    answering: bool
    ignored_key: bool
    _shown: str | None

    @property
    def current(self) -> PendingApproval | None: ...

    @property
    def waiting(self) -> bool: ...

    def post_message(self, message: Message) -> bool: ...

    def set_timer(self, delay: float, callback: Any) -> Any: ...

    def press(self, action: str) -> None: ...

    def _hint(self) -> None: ...

    def _cancel_confirm(self) -> None: ...

    def _expire_confirm(self) -> None: ...


class AnswerKeys:
    """Key handling of ApprovalPanel (a mixin: the panel holds the state it reads)."""

    @property
    def armed(self: ApprovalPanel) -> bool:
        """Keys now answer the call on screen (its guard time is over)."""
        return self.waiting and time.monotonic() - self.shown_at >= GUARD_SECONDS

    async def on_key(self: ApprovalPanel, event: events.Key) -> None:
        if self.mode != "view" or not (event.is_printable or event.key in ("enter", "escape")):
            return  # the reason box and editor have their own keys; ctrl+… stay app keys
        event.stop()
        event.prevent_default()
        if event.key == "escape":
            if self.confirming:
                self._cancel_confirm()
            else:
                self.post_message(self.Leave())
            return
        if self.current is None:
            return
        if time.monotonic() - self.shown_at < GUARD_SECONDS:
            if self.answering:  # going down the queue: a key pressed too soon is dropped
                self.ignored_key = True
                self._hint()
                self.set_timer(GUARD_SECONDS, self._hint)
            elif event.is_printable and event.character:
                # Typed as the call appeared: meant for the message box, not for this call.
                self.post_message(self.Typed(event.character))
            return
        if event.key == "enter" and self.confirming:
            self.press(self.confirming[0])
        elif event.character in KEY_ACTIONS:
            self.press(KEY_ACTIONS[event.character])
        elif self.confirming:
            self._cancel_confirm()
        elif event.is_printable and event.character:
            # Not an answer key: typing, which belongs in the message box (never lost).
            self.post_message(self.Typed(event.character))

    def press(self: ApprovalPanel, action: str) -> None:
        """An answer key (or button). Those in CONFIRMED run on the second press."""
        if action not in CONFIRMED:
            self._cancel_confirm()
            getattr(self, f"action_{action}")()
            return
        now = time.monotonic()
        if self.confirming and self.confirming[0] == action and (
                now - self.confirming[1] <= CONFIRM_SECONDS):
            self.confirming = None
            self._hint()
            getattr(self, f"action_{action}")()
            return
        self.confirming = (action, now)
        self._hint()
        self.set_timer(CONFIRM_SECONDS + 0.05, self._expire_confirm)

    def _on_screen(self: ApprovalPanel, call_id: str) -> None:
        if self._shown == call_id:
            self.shown_at = time.monotonic()

    def _cancel_confirm(self: ApprovalPanel) -> None:
        if self.confirming:
            self.confirming = None
            self._hint()

    def _expire_confirm(self: ApprovalPanel) -> None:
        if self.confirming and time.monotonic() - self.confirming[1] > CONFIRM_SECONDS:
            self._cancel_confirm()

    def _confirm_text(self: ApprovalPanel, action: str) -> str:
        req = self.current
        name = req.call.name if req else "this tool"
        file = "kep.toml"
        if action == "always_allow":
            return f"Press a again (or Enter) to always allow {name}: adds a rule to {file}."
        if action == "always_deny":
            return f"Press d again (or Enter) to always deny {name}: adds a rule to {file}."
        calls = self.reply.unsettled() if req and self.reply.has(req.call.id) else [
            r.call for r in self.queue]
        names = ", ".join(dict.fromkeys(c.name for c in calls))
        key, verb = ("Y", "allow") if action == "allow_all" else ("N", "deny")
        return (f"Press {key} again (or Enter) to {verb} all {len(calls)} "
                f"call{'s' * (len(calls) != 1)} listed above ({names}).")
