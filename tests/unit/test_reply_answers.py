"""Issue 24 item 7 in the core: the rules' verdict for every call of a reply is said up front
(ToolCallForeseen), and a "deny all" given before a call is reached stops it even where a rule
would allow it; a deny rule's deny_message reaches the model."""

from __future__ import annotations

import asyncio
from typing import Any

from test_conversation import Recorder, Scripted

from tuiapp.conversation.conversation import Approval, Conversation
from tuiapp.providers.base import StreamEnd
from tuiapp.settings.config_types import ApprovalConfig, Rule
from tuiapp.vocab.events import TextDelta, ToolCallDecided, ToolCallForeseen
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

ECHO = ToolSpec("echo", "", {"type": "object", "properties": {"text": {"type": "string"}}},
                "keprompt", "/x/echo")
RULES = ApprovalConfig("ask", (Rule("echo", "allow", "third", "kep.toml rule 1"),
                               Rule("echo", "deny", "secret", "kep.toml rule 2",
                                    deny_message="never echo secrets")))


def calls(*texts: str) -> list[ToolCall]:
    return [ToolCall(f"c{i}", "echo", {"text": t}) for i, t in enumerate(texts)]


def conversation(rec: Recorder, replies: list[Any], approver: Any,
                 standing: Any = None) -> Conversation:
    return Conversation(provider=Scripted(*replies), tools=lambda: {"echo": ECHO},
                        approval=lambda: RULES, approver=approver, executor=rec.execute,
                        emit=rec, standing=standing)


async def test_every_calls_verdict_is_foreseen_and_deny_all_covers_a_rule_allowed_call(
        ) -> None:
    rec = Recorder()
    blanket: dict[str, Approval] = {}

    async def approver(call: ToolCall, spec: ToolSpec, verdict: Any) -> Approval:
        await asyncio.sleep(0.5)  # the user reads the question (the verdicts arrive meanwhile)
        blanket.update({c: Approval(False) for c in ("c0", "c1", "c2")})  # N N on the first
        return Approval(False)

    replies = [[*calls("one", "two", "third"), StreamEnd("tool_use")],
               [TextDelta("ok"), StreamEnd("end_turn")]]
    conv = conversation(rec, replies, approver, standing=blanket.get)
    await conv.turn("go")
    foreseen = {e.call_id: e.decision for e in rec.of(ToolCallForeseen)}
    assert foreseen == {"c0": "ask", "c1": "ask", "c2": "allow"}
    assert rec.ran == []  # the third, allowed by a rule, was denied with the rest
    decided = {e.call_id: (e.decision, e.approved) for e in rec.of(ToolCallDecided)}
    assert decided["c2"] == ("ask", False)


async def test_a_deny_message_is_what_the_model_reads() -> None:
    rec = Recorder()
    replies = [[*calls("a secret"), StreamEnd("tool_use")],
               [TextDelta("ok"), StreamEnd("end_turn")]]
    conv = conversation(rec, replies, None)
    await conv.turn("go")
    result = next(m for m in conv.history if m.role == "tool")
    assert result.is_error and "never echo secrets" in result.content
    assert rec.of(ToolCallDecided)[0].message == "never echo secrets"
