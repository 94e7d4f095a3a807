"""Recording events into the session database: the half of Store that writes.

Each event is committed in its own transaction as it happens (see tuiapp.conversation.store for why
that is durable enough). Text deltas go to `drafts`; the MessageAdded that closes a reply
replaces them atomically; tool-call events update one `tool_calls` row; Usage keeps one
Conversation's totals per run.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from tuiapp.conversation import checkpoints
from tuiapp.conversation.session_history import answer_dangling_calls, make_title
from tuiapp.vocab.events import (
    Event,
    FileCheckpointed,
    MessageAdded,
    TextDelta,
    ToolCallDecided,
    ToolCallRequested,
    ToolCallStarted,
    ToolFinished,
    Usage,
)
from tuiapp.vocab.messages import Message, ToolCall

RESULT_CAP = 64 * 1024  # characters of a tool result kept in tool_calls (the message has it all)


JSON_SLICE = 256 * 1024  # characters of a reply's text encoded per json.dumps call


def message_json(message: Message) -> str:
    """json.dumps(message.to_dict()), a huge content encoded a slice at a time: one call on
    10 MB holds the GIL for ~40 ms, which stalls the event loop when a writer thread records
    it (recorder.OrderedRecorder). Escaping a string slice by slice gives the same text."""
    data = message.to_dict()
    content = message.content
    if len(content) <= JSON_SLICE:
        return json.dumps(data, ensure_ascii=False)
    data["content"] = ""
    head = json.dumps(data, ensure_ascii=False)
    # "role" comes first and is never empty: the first "content": "" is this one.
    at = head.index('"content": ""') + len('"content": "')
    parts = [head[:at]]
    parts.extend(json.dumps(content[i:i + JSON_SLICE], ensure_ascii=False)[1:-1]
                 for i in range(0, len(content), JSON_SLICE))
    parts.append(head[at:])
    return "".join(parts)


class EventRecording:
    """Mixed into Store, which provides the connection helpers declared here."""

    _runs: dict[str, int]

    if TYPE_CHECKING:
        def _tx(self) -> AbstractContextManager[sqlite3.Connection]: ...
        def _one(self, sql: str, *params: Any) -> Any: ...
        def _draft_text(self, session_id: str) -> str | None: ...
        def session_info(self, session_id: str) -> object: ...

    def begin_run(self, session_id: str) -> int:
        """Start recording a new run (one Conversation) into a session, and seal what a killed
        run left: its streamed draft becomes an interrupted reply, its unanswered calls get an
        error result. Returns the run number that Usage totals are kept under."""
        self.session_info(session_id)  # raises UnknownSession
        with self._tx() as db:
            self._seal(db, session_id)
            return self._new_run(db, session_id)

    def _new_run(self, db: sqlite3.Connection, session_id: str) -> int:
        run = int(self._one("SELECT coalesce(max(run), 0) + 1 FROM usage WHERE session_id=?",
                            session_id))
        db.execute("INSERT INTO usage (session_id, run) VALUES (?, ?)", (session_id, run))
        self._runs[session_id] = run
        return run

    def record(self, session_id: str, event: Event) -> None:
        """Persist one event in its own transaction. TextDelta goes to the draft; ToolOutput
        and display-only events are not stored (tool output is in the spool file and result)."""
        if isinstance(event, TextDelta):
            if event.text:
                with self._tx() as db:
                    n = self._one("SELECT coalesce(max(n), 0) + 1 FROM drafts WHERE session_id=?",
                                  session_id)
                    db.execute("INSERT INTO drafts (session_id, n, text) VALUES (?, ?, ?)",
                               (session_id, n, event.text))
        elif isinstance(event, MessageAdded):
            with self._tx() as db:
                self._add_message(db, session_id, event.message)
        elif isinstance(event, ToolCallRequested):
            with self._tx() as db:
                self._call_requested(db, session_id, event.call, event.source)
        elif isinstance(event, ToolCallDecided):
            with self._tx() as db:
                self._call_decided(db, session_id, event)
        elif isinstance(event, ToolCallStarted):
            with self._tx() as db:
                self._update_call(db, session_id, event.call_id, event.name,
                                  status="running", spool_path=event.spool_path)
        elif isinstance(event, ToolFinished):
            done: dict[str, Any] = {
                "status": event.status, "exit_code": event.exit_code,
                "duration_ms": event.duration_ms, "result": event.result[:RESULT_CAP],
                "truncated": int(event.truncated or len(event.result) > RESULT_CAP)}
            if event.spool_path:  # else keep the one ToolCallStarted gave
                done["spool_path"] = event.spool_path
            with self._tx() as db:
                self._update_call(db, session_id, event.call_id, event.name, **done)
        elif isinstance(event, FileCheckpointed):
            with self._tx() as db:
                checkpoints.save(db, session_id, event)
        elif isinstance(event, Usage):
            # A Usage event holds one Conversation's running totals: keep them per run.
            with self._tx() as db:
                # Without begin_run (no SessionRecorder), a run starts at the first Usage.
                run = self._runs.get(session_id) or self._new_run(db, session_id)
                db.execute("UPDATE usage SET input_tokens=?, output_tokens=?, cached_tokens=?,"
                           " reasoning_tokens=?, cost=? WHERE session_id=? AND run=?",
                           (event.input_tokens, event.output_tokens, event.cached_tokens,
                            event.reasoning_tokens, event.cost, session_id, run))

    def _add_message(self, db: sqlite3.Connection, session_id: str, message: Message) -> None:
        now = time.time()
        if message.role != "assistant":
            self._seal_draft(db, session_id)  # a stale draft stays before what follows it
        # The reply that closes a stream replaces its deltas, atomically.
        db.execute("DELETE FROM drafts WHERE session_id=?", (session_id,))
        self._append(db, session_id, message, now)
        if message.role == "user":
            db.execute("UPDATE sessions SET title=? WHERE id=? AND title=''",
                       (make_title(message.content), session_id))
        db.execute("UPDATE sessions SET updated=? WHERE id=?", (now, session_id))

    def _append(self, db: sqlite3.Connection, session_id: str, message: Message,
                now: float) -> None:
        seq = self._one("SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id=?",
                        session_id)
        db.execute("INSERT INTO messages (session_id, seq, data, created) VALUES (?, ?, ?, ?)",
                   (session_id, seq, message_json(message), now))

    def _seal_draft(self, db: sqlite3.Connection, session_id: str) -> None:
        text = self._draft_text(session_id)
        if text is not None:
            db.execute("DELETE FROM drafts WHERE session_id=?", (session_id,))
            self._append(db, session_id, Message("assistant", text, interrupted=True), time.time())

    def _seal(self, db: sqlite3.Connection, session_id: str) -> None:
        self._seal_draft(db, session_id)
        rows = db.execute("SELECT seq, data FROM messages WHERE session_id=? ORDER BY seq",
                          (session_id,)).fetchall()
        recorded = [Message.from_dict(json.loads(r[1])) for r in rows]
        fixed = answer_dangling_calls(recorded)
        if len(fixed) == len(recorded):
            return
        # Rare (a kill while tools ran): rewrite the tail from the first inserted answer on.
        first = next(i for i, m in enumerate(fixed) if i >= len(recorded) or m is not recorded[i])
        if first < len(rows):
            db.execute("DELETE FROM messages WHERE session_id=? AND seq>=?",
                       (session_id, rows[first][0]))
        now = time.time()
        for m in fixed[first:]:
            self._append(db, session_id, m, now)
        db.execute("UPDATE tool_calls SET status='interrupted', updated=? WHERE session_id=?"
                   " AND status IN ('requested', 'allowed', 'approved', 'running')",
                   (now, session_id))

    def _call_requested(self, db: sqlite3.Connection, session_id: str, call: ToolCall,
                        source: str) -> int:
        now = time.time()
        seq = self._one("SELECT coalesce(max(seq), 0) FROM messages WHERE session_id=?",
                        session_id)
        cur = db.execute(
            "INSERT INTO tool_calls (session_id, message_seq, call_id, name, arguments, source,"
            " status, created, updated) VALUES (?, ?, ?, ?, ?, ?, 'requested', ?, ?)",
            (session_id, seq, call.id, call.name, json.dumps(call.arguments, ensure_ascii=False),
             source, now, now))
        return int(cur.lastrowid or 0)

    def _call_decided(self, db: sqlite3.Connection, session_id: str, ev: ToolCallDecided) -> None:
        if ev.decision == "ask":
            status = "approved" if ev.approved else "denied"
        else:
            status = "allowed" if ev.decision == "allow" else "denied"
        fields: dict[str, Any] = {"status": status, "decision": ev.decision, "rule": ev.rule,
                                  "reason": ev.reason}
        if ev.edited_arguments is not None:
            fields.update(edited=1, arguments=json.dumps(ev.edited_arguments, ensure_ascii=False))
        self._update_call(db, session_id, ev.call_id, "", **fields)

    def _update_call(self, db: sqlite3.Connection, session_id: str, call_id: str, name: str,
                     **fields: Any) -> None:
        now = time.time()
        # Latest row with this id: some models reuse call ids across turns.
        row_id = self._one("SELECT id FROM tool_calls WHERE session_id=? AND call_id=?"
                           " ORDER BY id DESC LIMIT 1", session_id, call_id)
        if row_id is None:  # an event without its ToolCallRequested (sink attached mid-call)
            row_id = self._call_requested(db, session_id, ToolCall(call_id, name or "?", {}), "")
        sets = ", ".join(f"{k}=?" for k in fields)
        db.execute(f"UPDATE tool_calls SET {sets}, updated=? WHERE id=?",
                   (*fields.values(), now, row_id))
        db.execute("UPDATE sessions SET updated=? WHERE id=?", (now, session_id))
