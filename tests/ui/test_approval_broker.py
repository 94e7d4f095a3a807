"""The TUI's approver: an "allow all" answer never covers a second question about a call."""

from __future__ import annotations

import asyncio
from typing import Any

from tuiapp.conversation.conversation import Approval
from tuiapp.security.policy import Verdict
from tuiapp.ui.bridge import ApprovalBroker
from tuiapp.vocab.events import MessageAdded
from tuiapp.vocab.messages import Message, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

SPEC = ToolSpec("job", "", {}, "keprompt", "/x/job")


async def test_allow_all_does_not_answer_a_question_asked_again() -> None:
    posted: list[Any] = []
    broker = ApprovalBroker(posted.append)
    call = ToolCall("c1", "job", {})
    broker.observe(MessageAdded(Message("assistant", "", tool_calls=(call,))))
    broker.answer_rest(Approval(True))
    assert (await broker(call, SPEC, Verdict("ask", "r"))).approved  # covered by Y
    task = asyncio.ensure_future(broker(call, SPEC, Verdict("ask", "r", again="its file changed")))
    await asyncio.sleep(0.01)
    assert not task.done() and len(posted) == 1  # it waits for the user instead
    posted[0].request.resolve(Approval(False))
    assert not (await task).approved


async def test_allow_all_answers_a_question_still_on_its_way_to_the_panel() -> None:
    """N pressed while the next call's request is posted but not yet shown: it is covered."""
    posted: list[Any] = []
    broker = ApprovalBroker(posted.append)
    calls = (ToolCall("c1", "job", {}), ToolCall("c2", "job", {}))
    broker.observe(MessageAdded(Message("assistant", "", tool_calls=calls)))
    task = asyncio.ensure_future(broker(calls[1], SPEC, Verdict("ask", "r")))
    await asyncio.sleep(0.01)
    assert len(posted) == 1 and not task.done()
    broker.answer_rest(Approval(False))
    assert not (await asyncio.wait_for(task, 1)).approved
