"""KepApp's conversation routing (a mixin): a submitted prompt becomes a turn in the
background, Esc interrupts (the waiting call first, then running tools, then the turn), and
each core event goes to the transcript, the tool panes, the approval panel and the footer.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from textual import work
from textual.app import App
from textual.css.query import NoMatches
from textual.worker import Worker, WorkerState

from tuiapp.ui import resource_attach
from tuiapp.ui.focus import focus_now
from tuiapp.ui.literal import say
from tuiapp.ui.mention_complete import MentionCompletion
from tuiapp.ui.messages import CoreEvent, ReplyText
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.ui.widgets.status_footer import StatusFooter
from tuiapp.ui.widgets.transcript import Transcript
from tuiapp.vocab.events import (
    ContextUsed,
    MessageAdded,
    RegistryChanged,
    ToolCallDecided,
    ToolCallForeseen,
    ToolCallRequested,
    ToolCallStarted,
    ToolFinished,
    TurnEnded,
    Usage,
)

if TYPE_CHECKING:
    from tuiapp.ui.chat import ChatSession
    from tuiapp.ui.widgets.approval import ApprovalPanel
    from tuiapp.ui.widgets.first_run import FirstRunPanel
    from tuiapp.ui.widgets.tool_panes import ToolPanes


class ConversationRouting(MentionCompletion, App[int]):
    """Mixed into KepApp, which provides the chat, the panels and tools_ready (and, through
    MentionCompletion, the prompt's `@` completion)."""

    chat: ChatSession
    approval: ApprovalPanel
    panes: ToolPanes
    tools_ready: asyncio.Event
    narrow: bool
    _panes_hidden_by_user: bool

    if TYPE_CHECKING:
        def _welcome(self) -> list[FirstRunPanel]: ...
        def action_help(self, topic: str = "overview") -> None: ...
        def fit_panels(self) -> None: ...
        def show_tools(self) -> None: ...

    @property
    def busy(self) -> bool:
        return any(w.group == "conversation" and not w.is_finished for w in self.workers)

    def set_state(self, state: str) -> None:
        # While a call waits for an answer, that is what the footer says (a tool of the same
        # reply starting or finishing meanwhile does not change what Esc and y do).
        if state in ("streaming", "tools") and self.approval.is_mounted and self.approval.waiting:
            state = "approval"
        self.query_one(StatusFooter).state = state

    async def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        text: str | None = message.text
        if text.startswith(("/", "!")):  # kep's own (ui/slash): a command, a shell line
            from tuiapp.ui.slash.dispatch import handle

            text = await handle(self, text)  # type: ignore[arg-type]
            if text is None:
                return
        if self.busy:
            self.query_one(PromptInput).load_text(message.text)
            self.notify("kep is still answering: Esc interrupts it.", severity="warning")
            return
        for panel in self._welcome():
            await panel.dismiss()
        self.set_state("streaming")
        self.converse(resource_attach.take(self, text))  # MCP resources picked

    @work(exclusive=True, group="conversation", exit_on_error=False)
    async def converse(self, text: str | None) -> None:
        """One turn (text) or a retry (None), in the background: the UI never waits on it."""
        await self.tools_ready.wait()
        try:
            await (self.chat.send(text) if text is not None else self.chat.retry())
        except Exception as e:  # a bug, not a provider error (those are events)
            self.notify(say("internal error: {}: {}", type(e).__name__, e), severity="error",
                        timeout=15)
            self.set_state("error")
            raise

    def action_retry(self) -> None:
        """After a provider error or an interrupt: the same request again."""
        history = self.chat.history
        failed = self.query_one(StatusFooter).state == "error" or (
            bool(history) and history[-1].interrupted)
        if self.busy or self.chat.conversation is None or not failed:
            self.notify("Nothing to retry.")
            return
        self.set_state("streaming")
        self.converse(None)

    async def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # A turn cancelled before the core could say so (e.g. while tools were still being
        # listed) still has to leave the screen idle.
        worker = event.worker
        if worker.group == "conversation" and worker.is_finished and not self.busy:
            self.approval.drop_closed()
            self.query_one(Transcript).end_reply(
                interrupted=worker.state == WorkerState.CANCELLED)
            if self.query_one(StatusFooter).state != "error":
                self.set_state("error" if worker.state == WorkerState.ERROR else "idle")

    def action_interrupt(self) -> None:
        if self.approval.waiting and not self.approval.has_focus_within:
            focus_now(self.approval)  # Esc in the message box: over to the waiting call
        elif self.chat.running:
            self.chat.cancel_tools()
        elif self.busy and not self.approval.display:
            self.workers.cancel_group(self, "conversation")
        elif not self.busy:
            for panel in self._welcome():
                panel.dismiss()

    def on_prompt_input_interrupt(self) -> None:
        self.action_interrupt()

    def action_cancel_tools(self) -> None:
        if not self.chat.cancel_tools():
            self.notify("No tool is running.")

    def on_reply_text(self, message: ReplyText) -> None:
        if transcript := self._transcript():
            transcript.stream_text(message.text)

    def _transcript(self) -> Transcript | None:
        """None while kep closes: an event that arrives after the screen is gone is dropped
        (it is recorded already), never an error."""
        try:
            return self.query_one(Transcript)
        except NoMatches:
            return None

    async def on_core_event(self, message: CoreEvent) -> None:
        event = message.event
        transcript = self._transcript()
        if transcript is None:
            return
        transcript.handle(event)
        self.panes.handle(event)
        if (isinstance(event, ToolCallRequested) and not self._panes_hidden_by_user
                and not self.narrow):  # (narrow: an overlay opens only when asked for)
            self.panes.remove_class("-hidden")
            self.fit_panels()
        if isinstance(event, MessageAdded) and event.message.tool_calls:
            self.approval.start_reply(event.message.tool_calls)
        elif isinstance(event, (ToolCallDecided, ToolFinished)):
            self.approval.settle(event)
        elif isinstance(event, ToolCallForeseen):
            self.approval.foresee(event)
        if isinstance(event, ToolCallStarted):
            self.set_state("tools")
        elif isinstance(event, ToolFinished) and not self.chat.running:
            self.set_state("streaming")
        elif isinstance(event, Usage):
            self.query_one(StatusFooter).usage = event
        elif isinstance(event, ContextUsed):
            self.query_one(StatusFooter).context = event
        elif isinstance(event, TurnEnded):
            self.set_state("error" if event.stop_reason == "error" else "idle")
            self.approval.drop_closed()
            self.query_one(StatusFooter).session_id = self.chat.session_id
        elif isinstance(event, RegistryChanged):
            self.show_tools()

    def on_tool_panes_cancel_requested(self, message: ToolPanes.CancelRequested) -> None:
        from tuiapp.ui.slash import shell  # (a `!` line's pane)

        if not shell.cancel(message.call_id):
            self.chat.cancel_tools(message.call_id)
