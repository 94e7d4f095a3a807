"""KepApp's approval routing (a mixin): a call that needs an answer goes to the approval
panel, which takes the keyboard unless the user is writing in the message box; the panel's
answers (one call, the rest of a reply, a rule to remember) go back to the broker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import App

from tuiapp.ui.focus import focus_now
from tuiapp.ui.messages import ApprovalRequested
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.ui.widgets.transcript import Transcript

if TYPE_CHECKING:
    from tuiapp.ui.bridge import ApprovalBroker
    from tuiapp.ui.chat import ChatSession
    from tuiapp.ui.widgets.approval import ApprovalPanel


class ApprovalRouting(App[int]):
    """Mixed into KepApp, which provides the broker, the approval panel and the chat."""

    broker: ApprovalBroker
    approval: ApprovalPanel
    chat: ChatSession
    busy: bool

    if TYPE_CHECKING:
        def set_state(self, state: str) -> None: ...
        def add_rule(self, tool: str, action: str) -> None: ...

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

    def on_approval_panel_rule_requested(self, message: ApprovalPanel.RuleRequested) -> None:
        self.add_rule(message.tool, message.action)
