"""The approval panel's grants (a mixin): `s` (this session), `a` (always allow) and `d`
(always deny) list what the grant would cover, narrowest first (core.grants.scopes), each with
its digit; the "for 2 h" variants follow. The digit gives the grant to the app, which keeps it
(session) or writes it (always) before the call is answered, so the next call already meets it.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.containers import Vertical
from textual.content import Content

from tuiapp.conversation.conversation import Approval
from tuiapp.security.display import printable_line
from tuiapp.security.grants import Scope, scopes
from tuiapp.ui import network_questions
from tuiapp.ui.widgets.approval_keys import CHOOSE, ApprovalPanel, KeyButton
from tuiapp.vocab.messages import ToolCall

# (call, scope, "allow" | "deny", "session" | "always") → None; set by the app.
GrantSink = Callable[[ToolCall, Scope, str, str], None]
MAX_CHOICES = 9  # one digit each


class ChoiceButtons(Vertical):
    """Where the choices go; `shown` is what is drawn (redrawn only when it changes)."""

    shown: tuple[str, ...] = ()


class GrantChoices:
    grant_sink: GrantSink | None = None

    def choices(self: ApprovalPanel, action: str | None = None) -> list[Scope]:
        """What the grant being chosen (`action`, else the started sequence's) can cover."""
        req, action = self.current, action or self.confirming
        if req is None or action not in CHOOSE:
            return []
        if network_questions.is_question(req.call):
            return network_questions.choices(req.call, action)
        deny = action == "always_deny"
        base = scopes(req.call, req.spec, "deny" if deny else "allow")
        options = base if deny else [*base, *(s.for_a_while() for s in base)]
        return options[:MAX_CHOICES]

    def grant(self: ApprovalPanel, action: str, choice: int) -> None:
        options = self.choices(action)
        req = self.current
        if req is None or not 1 <= choice <= len(options):
            return
        self.keys.pending = None
        deny = action == "always_deny"
        where = "session" if action == "session" else "always"
        sink = self.grant_sink
        if sink is not None:
            sink(req.call, options[choice - 1], "deny" if deny else "allow", where)
        self._answer(Approval(False, "the user always denies this") if deny else Approval(True))

    def _draw_choices(self: ApprovalPanel) -> None:
        """The choices as buttons (a click picks one, as its digit does)."""
        box = self.query_one(".approval-choices")
        options = self.choices()
        shown = tuple(o.label for o in options)
        if shown == box.shown:
            return
        box.shown = shown
        box.remove_children()
        box.display = bool(options)
        box.mount_all([KeyButton(Content.assemble((str(i), "bold"), " ",
                                                  printable_line(o.label)),
                                 compact=True, name=f"choice-{i}")
                       for i, o in enumerate(options, 1)])
