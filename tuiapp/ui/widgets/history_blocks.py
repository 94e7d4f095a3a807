"""A resumed session's history, drawn a page at a time: where a page may start, and a tool
call's block as the call ended."""

from __future__ import annotations

from collections.abc import Sequence

from tuiapp.conversation.store import ToolCallRecord
from tuiapp.ui.widgets.tool_block import ToolCallBlock, first_line
from tuiapp.vocab.messages import Message, ToolCall


def page_start(messages: Sequence[Message], start: int) -> int:
    """`start` clamped to the history, moved back so a page never begins with tool results
    whose call is on the page before."""
    start = max(0, start)
    while start > 0 and messages[start].role == "tool":
        start -= 1
    return start


def screenful_start(messages: Sequence[Message], end: int, rows: int, width: int) -> int:
    """Where a page ending at `end` starts to fill about `rows` rows: each message's text
    wrapped at `width`, plus a line around it and three per tool call (an estimate; the rest
    of the history is drawn right after the first frame anyway)."""
    width = max(width, 20)
    i = end
    while i > 0 and rows > 0:
        i -= 1
        m = messages[i]
        text = m.content or ""
        lines = sum(len(line) // width + 1 for line in text.split("\n")) if text else 0
        rows -= lines + 2 + 3 * len(m.tool_calls)
    return page_start(messages, i) if i < end else end


def restored_block(call: ToolCall, rec: ToolCallRecord | None,
                    result: Message | None) -> ToolCallBlock:
    block = ToolCallBlock(call)
    if rec is not None:
        status = rec.status if rec.status != "running" else "interrupted"
        detail = f"denied by you: {rec.reason}" if rec.status == "denied" and rec.reason else ""
        if status in ("failed", "timed_out") and rec.result:
            detail = first_line(rec.result)
        block.restore(status, rec.exit_code, rec.duration_ms, detail)
    elif result is not None:
        block.restore("failed" if result.is_error else "ok", None, None,
                      first_line(result.content) if result.is_error else "")
    else:
        block.restore("interrupted", None, None, "")
    return block
