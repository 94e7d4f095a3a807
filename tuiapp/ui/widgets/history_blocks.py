"""A resumed session's history, drawn a page at a time: where a page may start, and a tool
call's block as the call ended."""

from __future__ import annotations

from collections.abc import Sequence

from tuiapp.core.messages import Message, ToolCall
from tuiapp.core.store import ToolCallRecord
from tuiapp.ui.widgets.tool_block import ToolCallBlock, first_line


def page_start(messages: Sequence[Message], start: int) -> int:
    """`start` clamped to the history, moved back so a page never begins with tool results
    whose call is on the page before."""
    start = max(0, start)
    while start > 0 and messages[start].role == "tool":
        start -= 1
    return start


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
