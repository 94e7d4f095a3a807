"""The approval panel's keys: which key answers how, and the guards against stray typing.

- Keys in the first GUARD_SECONDS after a call is on screen were typed before the user saw
  it: they go to the message box.
- `y`, `n`, `e` answer the call on screen only.
- The answers that write config or cover more than this call need a sequence no word
  contains: `s` (this session), `a` (always allow) and `d` (always deny) open a numbered list
  of what the grant covers, and only a digit picks one (words have no digits; Enter never
  picks, since "a" + Enter is a word and a line). `Y` / `N` (every call of the reply) take a
  second `Y` / `N` or Enter: no word has two capitals after its first letter.
- `y`, `n` or `e` in a sequence count on their own. Any other key is typing: it goes to the
  message box together with the key it broke, and so does every key after it until the panel
  has the keyboard again (fast typing never reaches an answer while the focus moves).

KeyReader holds that logic without Textual, so a dictionary of words can be typed at it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

from textual import events
from textual.message import Message
from textual.widgets import Button

from tuiapp.ui import keys
from tuiapp.ui.messages import PendingApproval
from tuiapp.ui.widgets.approval_queue import ReplyCalls
from tuiapp.vocab.messages import ToolCall

# (key, label, action, variant). Labels stay short: the row must fit beside the tool panes.
BUTTONS = (("y", "allow", "allow", "success"), ("n", "deny", "deny", "error"),
           ("s", "session", "session", "default"), ("a", "always", "always_allow", "default"),
           ("d", "never", "always_deny", "default"), ("e", "edit", "edit", "default"),
           ("Y", "all", "allow_all", "default"), ("N", "none", "deny_all", "default"))
# Each answer's name in `[keys]` (ui/keys.py): its key there is the one in force.
KEY_NAMES = {"allow": "approve", "deny": "deny", "session": "session", "always_allow": "always",
             "always_deny": "never", "edit": "edit", "allow_all": "approve_all",
             "deny_all": "deny_all"}


def answer_key(action: str) -> str:
    return keys.key(KEY_NAMES[action])


def key_actions() -> dict[str, str]:
    """The answer keys in force: character → action."""
    return {answer_key(action): action for _, _, action, _ in BUTTONS}


SINGLE = {"allow", "deny", "edit"}  # answer the call on screen, one key
CHOOSE = {"session", "always_allow", "always_deny"}  # then a digit: what the grant covers
CONFIRMED = {"allow_all", "deny_all"}  # then the same key again, or Enter
GUARD_SECONDS = 0.5  # keys this soon after a call is shown were not meant for it
CONFIRM_SECONDS = 3.0  # a started Y / N is forgotten after this long
CHOOSE_SECONDS = 15.0  # and a list of grants (time to read it), so a late digit is typing


@dataclass(frozen=True)
class Step:
    """What one key did: `answer` an action (with `choice`, 1-based, for CHOOSE ones), `arm`
    (the first key of a sequence), `cancel`, `typed` text for the message box, `leave`."""

    kind: str
    action: str = ""
    choice: int = 0
    text: str = ""


class KeyReader:
    """The answer keys as a state machine. `choices` says how many grants `s`/`a`/`d` offer."""

    def __init__(self) -> None:
        self.pending: tuple[str, str] | None = None  # (action, key) of a started sequence
        self.forwarding = False  # typing was sent to the message box: keep sending it

    def reset(self) -> None:
        self.pending, self.forwarding = None, False

    def feed(self, key: str, character: str | None, choices: int = 9) -> Step:
        char = character if character and character.isprintable() else None
        if key == "escape":
            if self.pending:
                self.pending = None
                return Step("cancel")
            return Step("leave")
        if self.forwarding:
            return Step("typed", text=char) if char else Step("none")
        if self.pending is not None:
            action, first = self.pending
            self.pending = None
            if action in CONFIRMED and (key == "enter" or char == first):
                return Step("answer", action)
            if action in CHOOSE and char is not None and char.isdigit() and (
                    1 <= int(char) <= choices):
                return Step("answer", action, int(char))
            if char is None:
                return Step("cancel")  # Enter, arrows: the sequence is off, nothing typed
            if key_actions().get(char or "") not in SINGLE:
                self.forwarding = True  # a word that began with an answer key
                return Step("typed", text=first + char)
            # y, n or e: the user changed their mind; it answers the call on screen.
        action = key_actions().get(char or "")
        if action in SINGLE:
            return Step("answer", action)
        if action is not None:
            self.pending = (action, char or "")
            return Step("arm", action)
        if char is not None:
            self.forwarding = True
            return Step("typed", text=char)
        return Step("none")


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
    """What the key handling (and the grant choices) read and call on the panel they are
    mixed into."""

    Typed: type[Message]
    Leave: type[Message]
    queue: list[PendingApproval]
    reply: ReplyCalls
    keys: KeyReader
    mode: str
    shown_at: float
    answering: bool
    ignored_key: bool
    _shown: str | None
    _armed_at: float
    grant_sink: Any

    @property
    def current(self) -> PendingApproval | None: ...

    @property
    def waiting(self) -> bool: ...

    @property
    def confirming(self) -> str | None: ...

    def post_message(self, message: Message) -> bool: ...

    def set_timer(self, delay: float, callback: Any) -> Any: ...

    def query_one(self, selector: Any, expect_type: Any = None) -> Any: ...

    def choices(self, action: str | None = None) -> list[Any]: ...

    def grant(self, action: str, choice: int) -> None: ...

    def batch_calls(self, action: str) -> list[ToolCall]: ...

    def _answer(self, approval: Any) -> None: ...

    def _step(self, step: Step) -> None: ...

    def _hint(self) -> None: ...

    def _cancel_confirm(self) -> None: ...

    def _expire_confirm(self) -> None: ...

    def _window(self, action: str) -> float: ...

    def _confirm_text(self, action: str) -> str: ...


class AnswerKeys:
    """Key handling of ApprovalPanel (a mixin: the panel holds the state it reads)."""

    @property
    def armed(self: ApprovalPanel) -> bool:
        """Keys now answer the call on screen (its guard time is over)."""
        return self.waiting and time.monotonic() - self.shown_at >= GUARD_SECONDS

    @property
    def confirming(self: ApprovalPanel) -> str | None:
        """The action whose sequence was started (its second key is awaited)."""
        return self.keys.pending[0] if self.keys.pending else None

    def action_scroll_args(self: ApprovalPanel, pages: int) -> None:
        """A page of the diff and arguments (a long diff is read before it is answered)."""
        from textual.containers import VerticalScroll

        box = self.query_one(".approval-args", VerticalScroll)
        box.scroll_to(y=box.scroll_y + pages * max(1, box.scrollable_content_region.height - 1),
                      animate=False)

    async def on_key(self: ApprovalPanel, event: events.Key) -> None:
        if self.mode != "view" or not (event.is_printable or event.key in ("enter", "escape")):
            return  # the reason box and editor have their own keys; ctrl+… stay app keys
        event.stop()
        event.prevent_default()
        if event.key != "escape" and self.current is None and not self.keys.forwarding:
            return
        if event.key != "escape" and not self.keys.forwarding and (
                time.monotonic() - self.shown_at < GUARD_SECONDS):
            if self.answering:  # going down the queue: a key pressed too soon is dropped
                self.ignored_key = True
                self._hint()
                self.set_timer(GUARD_SECONDS, self._hint)
            elif event.is_printable and event.character:
                # Typed as the call appeared: meant for the message box, not for this call.
                self.keys.forwarding = True
                self.post_message(self.Typed(event.character))
            return
        self._step(self.keys.feed(event.key, event.character, len(self.choices())))

    def _step(self: ApprovalPanel, step: Step) -> None:
        if step.kind == "leave":
            self.post_message(self.Leave())
        elif step.kind == "typed":
            self.post_message(self.Typed(step.text))
        elif step.kind == "answer":
            if step.action in CHOOSE:
                self.grant(step.action, step.choice)
            else:
                getattr(self, f"action_{step.action}")()
        elif step.kind == "arm":
            self._armed_at = time.monotonic()
            self.set_timer(self._window(step.action) + 0.05, self._expire_confirm)
        self._hint()

    def press(self: ApprovalPanel, action: str) -> None:
        """A button: the same sequence as its key (a click is deliberate, no guard)."""
        key = answer_key(action)
        self.keys.forwarding = False
        if action in CONFIRMED and self.confirming == action:
            self._step(self.keys.feed("enter", None))
        else:
            self.keys.pending = None
            self._step(self.keys.feed(key, key))

    def _on_screen(self: ApprovalPanel, call_id: str) -> None:
        if self._shown == call_id:
            self.shown_at = time.monotonic()

    def _cancel_confirm(self: ApprovalPanel) -> None:
        if self.keys.pending:
            self.keys.pending = None
            self._hint()

    def _window(self: ApprovalPanel, action: str) -> float:
        return CHOOSE_SECONDS if action in CHOOSE else CONFIRM_SECONDS

    def _expire_confirm(self: ApprovalPanel) -> None:
        pending = self.keys.pending
        if pending and time.monotonic() - self._armed_at > self._window(pending[0]):
            self._cancel_confirm()

    def _confirm_text(self: ApprovalPanel, action: str) -> str:
        req = self.current
        if action in CHOOSE:
            what = {"session": "Allow for this session", "always_allow": "Always allow",
                    "always_deny": "Always deny"}[action]
            return f"{what}: press the number of what it covers (Esc: back)."
        calls = self.batch_calls(action)
        names = ", ".join(dict.fromkeys(c.name for c in calls))
        key, verb = answer_key(action), ("allow" if action == "allow_all" else "deny")
        if req is None:
            return ""
        return (f"Press {key} again (or Enter) to {verb} {len(calls)} "
                f"call{'s' * (len(calls) != 1)} of this reply ({names}).")
