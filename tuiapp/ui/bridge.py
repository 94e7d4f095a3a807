"""The two callbacks the core gets from the UI: `emit` (events → posted messages) and the
approver (a call to ask about → a Future that the approval panel resolves).

Both run on the app's event loop (the conversation is an async worker), so no locking.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from textual.message import Message

from tuiapp.conversation.conversation import Approval
from tuiapp.security.policy import Verdict
from tuiapp.ui.messages import ApprovalRequested, CoreEvent, PendingApproval, ReplyText
from tuiapp.vocab.events import Event, MessageAdded, TextDelta
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

Post = Callable[[Message], object]


class EventBridge:
    """`bridge(event)`: post the event to the app, streamed text as ReplyText (the
    conversation already joins the deltas of each 20 ms into one event)."""

    def __init__(self, post: Post) -> None:
        self._post = post

    def __call__(self, event: Event) -> None:
        self._post(ReplyText(event.text) if isinstance(event, TextDelta) else CoreEvent(event))


class ApprovalBroker:
    """The Conversation's approver. Also remembers the calls of the latest model reply, so
    "allow all" / "deny all" (Y / N) can answer the ones of that reply not asked about yet:
    the conversation asks about calls one at a time, in order."""

    def __init__(self, post: Post) -> None:
        self._post = post
        self._batch: frozenset[str] = frozenset()
        self._blanket: Approval | None = None
        # Questions posted but not answered yet, that a Y / N can still cover: a request may
        # be on its way to the panel when the answer arrives.
        self._waiting: dict[str, asyncio.Future[Approval]] = {}

    def observe(self, event: Event) -> None:
        if isinstance(event, MessageAdded) and event.message.role == "assistant":
            self._batch = frozenset(c.id for c in event.message.tool_calls)
            self._blanket = None

    def answer_rest(self, approval: Approval) -> None:
        """Y / N: the same answer for every remaining call of the current reply."""
        self._blanket = approval
        for call_id, future in self._waiting.items():
            if call_id in self._batch and not future.done():
                future.set_result(approval)

    def in_batch(self, call_id: str) -> bool:
        return call_id in self._batch

    def reset(self) -> None:
        self._batch, self._blanket = frozenset(), None

    async def __call__(self, call: ToolCall, spec: ToolSpec, verdict: Verdict) -> Approval:
        # A second question about a call (edited arguments, changed code) needs its own answer.
        if self._blanket is not None and call.id in self._batch and not verdict.again:
            return self._blanket
        future: asyncio.Future[Approval] = asyncio.get_running_loop().create_future()
        if not verdict.again:
            self._waiting[call.id] = future
        self._post(ApprovalRequested(PendingApproval(call, spec, verdict, future)))
        try:
            return await future
        finally:
            if self._waiting.get(call.id) is future:
                del self._waiting[call.id]
