"""A recorded session as readable text, Markdown or JSON (for `kep sessions show|export` and the
TUI's export). Every form passes the secrets filter last: a session recorded before a key was
known (or by an older kep) still exports without it."""

from __future__ import annotations

import json
import re
from collections import defaultdict, deque
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tuiapp.conversation.store import SessionInfo, Store, ToolCallRecord
from tuiapp.security import secrets
from tuiapp.security.display import json_printable, printable
from tuiapp.vocab.messages import Message, ToolCall

SHOW_RESULT_LINES = 40  # `show` is for reading; `export` keeps everything


@dataclass(frozen=True)
class Transcript:
    info: SessionInfo
    messages: list[Message]
    calls: list[ToolCallRecord]

    @classmethod
    def load(cls, store: Store, session_id: str) -> Transcript:
        return cls(store.session_info(session_id),
                   store.load_messages(session_id, for_resume=False),
                   store.tool_calls(session_id))

    def call_records(self) -> dict[int, list[ToolCallRecord | None]]:
        """For each assistant message (by index), the record of each of its calls, in order.
        Call ids can repeat across turns, so records are matched first come, first served."""
        queues: dict[str, deque[ToolCallRecord]] = defaultdict(deque)
        for rec in self.calls:
            queues[rec.call_id].append(rec)
        out: dict[int, list[ToolCallRecord | None]] = {}
        for i, m in enumerate(self.messages):
            if m.tool_calls:
                out[i] = [queues[c.id].popleft() if queues[c.id] else None for c in m.tool_calls]
        return out


def when(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def call_outcome(rec: ToolCallRecord | None) -> str:
    """`ok · exit 0 · 12 ms · allowed by rule …` — what happened to a call, in one line."""
    if rec is None:
        return "no record"
    parts = [rec.status]
    if rec.exit_code is not None:
        parts.append(f"exit {rec.exit_code}")
    if rec.duration_ms is not None and rec.status not in ("denied", "interrupted"):
        parts.append(f"{rec.duration_ms} ms")
    if rec.decision == "ask":
        parts.append("asked the user" + (f": {rec.reason}" if rec.reason else ""))
    elif rec.decision and rec.rule:
        parts.append(f"policy {rec.decision} ({rec.rule})")
    if rec.edited:
        parts.append("arguments edited")
    if rec.status in ("requested", "allowed", "approved", "running"):
        parts.append("no result recorded")
    return " · ".join(parts)


def _arguments(call: ToolCall, rec: ToolCallRecord | None) -> dict[str, Any]:
    return rec.arguments if rec is not None and rec.edited else call.arguments


def _role_label(m: Message) -> str:
    if m.role == "tool":
        label = f"tool result: {m.name or m.tool_call_id}"
        return label + " (error)" if m.is_error else label
    return m.role + (" (interrupted)" if m.interrupted else "")


def to_text(t: Transcript) -> str:
    i = t.info
    lines = [f"session {i.id} · {i.model} · {i.project_root}",
             f"created {when(i.created)} · updated {when(i.updated)} · {i.message_count} messages"
             f" · tokens {i.input_tokens} in / {i.output_tokens} out", ""]
    records = t.call_records()
    for n, m in enumerate(t.messages):
        lines.append(f"[{_role_label(m)}]")
        body = m.with_chips() if m.attachments else m.content
        if m.role == "tool":
            rows = body.splitlines()
            if len(rows) > SHOW_RESULT_LINES:
                more = f"… {len(rows) - SHOW_RESULT_LINES} more lines (kep sessions export has all)"
                body = "\n".join([*rows[:SHOW_RESULT_LINES], more])
        if body:
            lines.append(body)
        for call, rec in zip(m.tool_calls, records.get(n, []), strict=False):
            args = json.dumps(_arguments(call, rec), ensure_ascii=False)
            lines.append(f"  -> {call.name} {args}  [{call_outcome(rec)}]")
        if m.interrupted and not m.content:
            lines.append("(no text arrived)")
        lines.append("")
    return secrets.active().redact(printable("\n".join(lines)))  # shown on a terminal


def _fence(text: str, lang: str = "") -> str:
    longest = max((len(r) for r in re.findall(r"`{3,}", text)), default=2)
    tick = "`" * (longest + 1)
    return f"{tick}{lang}\n{text}\n{tick}"


def to_markdown(t: Transcript) -> str:
    i = t.info
    out = [f"# Session {i.id}" + (f": {i.title}" if i.title else ""), "",
           f"- Project: `{i.project_root}`", f"- Model: `{i.model}`",
           f"- Created: {when(i.created)}, updated: {when(i.updated)}",
           f"- Tokens: {i.input_tokens} in / {i.output_tokens} out", ""]
    records = t.call_records()
    for n, m in enumerate(t.messages):
        out += [f"## {_role_label(m).capitalize()}", ""]
        if m.role == "tool":
            out += [_fence(m.content, "text"), ""]
        elif m.content:
            out += [m.content, ""]
        if m.images:
            out += [f"Images: {', '.join(f'`{p}`' for p in m.images)}", ""]
        out += [*(f"- {a.chip()}" for a in m.attachments), ""] if m.attachments else []
        for call, rec in zip(m.tool_calls, records.get(n, []), strict=False):
            args = json.dumps(_arguments(call, rec), ensure_ascii=False, indent=2)
            out += [f"**Tool call** `{call.name}` ({call_outcome(rec)})", "",
                    _fence(args, "json"), ""]
        if m.interrupted:
            out += ["*(reply interrupted)*", ""]
    # The text is kept, never a raw control character: Markdown is read on terminals too.
    return secrets.active().redact(printable("\n".join(out)))


def to_json(t: Transcript) -> str:
    session = t.info.to_dict()
    session["created_at"] = datetime.fromtimestamp(t.info.created).astimezone().isoformat()
    session["updated_at"] = datetime.fromtimestamp(t.info.updated).astimezone().isoformat()
    doc = {"session": session,
           "messages": [m.to_dict(image_data=False) for m in t.messages],
           "tool_calls": [c.to_dict() for c in t.calls]}
    doc = secrets.redact_data(doc)
    # Exact data; the control characters json.dumps leaves raw are written as \u escapes.
    return json_printable(json.dumps(doc, ensure_ascii=False, indent=2)) + "\n"
