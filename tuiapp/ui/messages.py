"""Textual messages that carry the core's events into the UI (messages up, attributes down).

The core calls a plain `emit(event)` callback; the bridge turns each event into one of these
and posts it to the app, so widgets are only ever touched from the app's message loop.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from textual.message import Message

from tuiapp.conversation.conversation import Approval
from tuiapp.security.policy import Verdict
from tuiapp.vocab.events import Event
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec


@dataclass
class PendingApproval:
    """One call waiting for the user. The approval panel resolves `future` exactly once."""

    call: ToolCall
    spec: ToolSpec
    verdict: Verdict
    future: asyncio.Future[Approval]

    def resolve(self, approval: Approval) -> None:
        if not self.future.done():
            self.future.set_result(approval)

    @property
    def open(self) -> bool:
        return not self.future.done()


class CoreEvent(Message):
    """Any core event except streamed text (see ReplyText)."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class ReplyText(Message):
    """Streamed reply text: what the model sent in about 20 ms (a fast model costs one
    message per batch, not per token)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class ApprovalRequested(Message):
    """The policy said ask: the approval panel shows the call and resolves the Future."""

    def __init__(self, request: PendingApproval) -> None:
        super().__init__()
        self.request = request
