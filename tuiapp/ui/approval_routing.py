"""KepApp's approval routing (a mixin): a call that needs an answer goes to the approval
panel, which takes the keyboard unless the user is writing in the message box; the panel's
answers (one call, the rest of a reply, a rule to remember) go back to the broker.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from textual.app import App

from tuiapp.security.grants import Grant, Scope, describe_call
from tuiapp.ui import network_questions
from tuiapp.ui.focus import focus_now
from tuiapp.ui.messages import ApprovalRequested
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.ui.widgets.transcript import Transcript

if TYPE_CHECKING:
    from tuiapp.project.workspace import Workspace
    from tuiapp.ui.bridge import ApprovalBroker
    from tuiapp.ui.chat import ChatSession
    from tuiapp.ui.widgets.approval import ApprovalPanel
    from tuiapp.vocab.messages import ToolCall


class ApprovalRouting(App[int]):
    """Mixed into KepApp, which provides the broker, the approval panel and the chat."""

    broker: ApprovalBroker
    approval: ApprovalPanel
    chat: ChatSession
    busy: bool

    ws: Workspace

    if TYPE_CHECKING:
        def set_state(self, state: str) -> None: ...
        def add_rule(self, tool: str, action: str, *, tool_regex: str | None = None,
                     args: str | None = None, label: str = "", source: str = "",
                     expires: str = "") -> None: ...

    def answers_for(self, panel: ApprovalPanel) -> None:
        """`panel` answers the calls' grants and the sandbox's network questions."""
        panel.grant_sink = self.apply_grant
        network_questions.install(self)

    def on_approval_requested(self, message: ApprovalRequested) -> None:
        req = message.request
        if block := self.query_one(Transcript).block(req.call.id):
            block.asking(req.verdict.rule)
        self.approval.push(req)
        self.set_state("approval")
        if not self.approval.has_focus_within and not self._prompt_in_use():
            focus_now(self.approval)

    def _prompt_in_use(self) -> bool:
        """The user is writing in the message box (it has the keyboard and some text): a
        call that appears now must not take the keyboard (Esc there moves to it). An empty
        box is not in use: keys typed just as the call appears are caught by its guard."""
        prompt = self.query_one(PromptInput)
        return prompt.has_focus and bool(prompt.text)

    def on_approval_panel_typed(self, message: ApprovalPanel.Typed) -> None:
        prompt = self.query_one(PromptInput)
        focus_now(prompt)
        prompt.insert(message.text)

    def on_approval_panel_leave(self) -> None:
        focus_now(self.query_one(PromptInput))

    def on_approval_panel_answered_all(self, message: ApprovalPanel.AnsweredAll) -> None:
        # Requests of the same reply that reached the panel meanwhile get the same answer.
        self.broker.answer_rest(message.approval)
        self.approval.answer_matching(self.broker.in_batch, message.approval)

    def on_approval_panel_done(self) -> None:
        if self.approval.display:
            return  # the next call arrived meanwhile: it keeps the keyboard
        focus_now(self.query_one(PromptInput))
        if self.busy:
            self.set_state("tools" if self.chat.running else "streaming")

    _grants_reviewed = False

    async def action_quit(self) -> None:
        """Quit; with session grants, first list them and keep the ticked ones as rules."""
        grants = self.ws.grants.listed()
        if not grants or self._grants_reviewed:
            await super().action_quit()
            return
        from tuiapp.ui.screens.grants_review import GrantsReview

        def done(keep: list[Grant] | None) -> None:
            self._grants_reviewed = True
            for g in keep or []:
                expires = ""
                if g.rule.expires_at is not None:
                    hours = max(1, round((g.rule.expires_at - time.time()) / 3600))
                    expires = f"{hours}h"
                self.add_rule(g.rule.tool, g.rule.action, tool_regex=g.rule.tool,
                              args=g.rule.args, label=g.label, source=g.call, expires=expires)
            self.ws.grants.clear()
            self.exit(0)

        self.push_screen(GrantsReview(grants), done)

    def apply_grant(self, call: ToolCall, scope: Scope, action: str, where: str) -> None:
        """s / a / d and a digit (the panel calls this before it answers the call, so the
        next call already meets the grant): kept for the session, or written to kep.toml."""
        if network_questions.is_question(call):
            network_questions.grant(self, call, scope, action, where)
            return
        expires = f"{int(scope.expires_in // 3600)}h" if scope.expires_in else ""
        if where == "session":
            self.ws.grants.add(scope, action, call)  # type: ignore[arg-type]
            self.notify(f"For this session: {action} {scope.label}", title="Approval grant",
                        timeout=6, markup=False)
            return
        self.add_rule(call.name, action, tool_regex=scope.tool, args=scope.args,
                      label=scope.label, source=describe_call(call), expires=expires)
