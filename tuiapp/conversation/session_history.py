"""A recorded history made valid to send again: unanswered tool calls get an error result,
a retried interrupted reply is dropped; and a session's title from its first user message.
"""

from __future__ import annotations

from collections.abc import Sequence

from tuiapp.vocab.messages import Message

TITLE_CAP = 80
INTERRUPTED_CALL = ("Error: kep stopped before this call returned a result "
                    "(it may or may not have run).")


def make_title(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TITLE_CAP else line[: TITLE_CAP - 1].rstrip() + "…"


def answer_dangling_calls(history: Sequence[Message]) -> list[Message]:
    """Give every tool call without a result an error result, right after its siblings.

    A process killed while tools ran leaves calls unanswered; every provider API rejects such
    a history, so a resumed session must answer them."""
    out: list[Message] = []
    pending: list[tuple[str, str]] = []

    def flush() -> None:
        for call_id, name in pending:
            out.append(Message("tool", INTERRUPTED_CALL, tool_call_id=call_id, name=name,
                               is_error=True))
        pending.clear()

    for m in history:
        if m.role == "tool" and pending:
            pending[:] = [(cid, n) for cid, n in pending if cid != m.tool_call_id]
        elif m.role != "tool":
            flush()
        out.append(m)
        if m.role == "assistant" and m.tool_calls:
            pending[:] = [(c.id, c.name) for c in m.tool_calls]
    flush()
    return out



def history_for_model(history: Sequence[Message]) -> list[Message]:
    """What a resumed conversation sends: an interrupted reply that was retried (another
    assistant reply follows it) is dropped, as Conversation.retry drops it, and unanswered
    tool calls get an error result."""
    kept = [m for i, m in enumerate(history)
            if not (m.role == "assistant" and m.interrupted and i + 1 < len(history)
                    and history[i + 1].role == "assistant")]
    return answer_dangling_calls(kept)
