"""Sessions in SQLite: every event that changes the record is committed as it happens.

Durability: WAL journal with synchronous=NORMAL. A commit in WAL mode writes its pages to the
-wal file with write(2) before COMMIT returns; NORMAL only skips the fsync. The bytes then sit
in the OS page cache, which survives the death of our process, so `kill -9` at any moment loses
at most the transaction in flight (SQLite's atomic commit makes that all-or-nothing). Only a
power cut or kernel crash can roll back the last few commits, and even then the file stays
consistent. FULL would fsync every commit (one per streamed text delta) for no gain against
the failure the issue names. A commit here costs ~30-50 µs, so each TextDelta gets its own.

Streaming text: deltas are appended as rows of `drafts` (O(1) per delta, no rewrite of a
growing string). The MessageAdded that closes the reply replaces the draft in the same
transaction. A draft left behind by a killed process is shown as an interrupted assistant
reply, and turned into a real message when the session is resumed (`begin_run`).

Threads: one connection, used from the thread that opened it (sqlite3's check_same_thread
enforces it). The TUI calls the store from its event-loop thread only. Other processes
(`kep sessions` while the TUI writes) are fine: WAL readers never block the writer.

Secrets: the store sees only events and messages, never provider config or headers.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuiapp import paths
from tuiapp.core.events import (
    Event,
    MessageAdded,
    TextDelta,
    ToolCallDecided,
    ToolCallRequested,
    ToolCallStarted,
    ToolFinished,
    Usage,
)
from tuiapp.core.messages import Message, ToolCall

SCHEMA_VERSION = 1
RESULT_CAP = 64 * 1024  # characters of a tool result kept in tool_calls (the message has it all)
TITLE_CAP = 80
INTERRUPTED_CALL = ("Error: kep stopped before this call returned a result "
                    "(it may or may not have run).")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    project_root TEXT NOT NULL,
    model TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_by_project ON sessions (project_root, updated);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    data TEXT NOT NULL,            -- Message.to_dict() as JSON
    created REAL NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS drafts (  -- text deltas of the reply being streamed
    session_id TEXT NOT NULL,
    n INTEGER NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (session_id, n)
);
CREATE TABLE IF NOT EXISTS tool_calls (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    message_seq INTEGER NOT NULL,  -- the assistant message that made the call
    call_id TEXT NOT NULL,
    name TEXT NOT NULL,
    arguments TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,          -- requested, allowed, approved, running, ok, failed, denied, ...
    decision TEXT,
    rule TEXT,
    reason TEXT NOT NULL DEFAULT '',
    edited INTEGER NOT NULL DEFAULT 0,
    exit_code INTEGER,
    duration_ms INTEGER,
    result TEXT,
    truncated INTEGER NOT NULL DEFAULT 0,
    spool_path TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS tool_calls_by_call ON tool_calls (session_id, call_id);
CREATE TABLE IF NOT EXISTS usage (   -- one row per run (a Conversation's cumulative totals)
    session_id TEXT NOT NULL,
    run INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, run)
);
"""
# Columns added since schema 1 (ALTER TABLE on open: additive, older kep versions ignore them).
_USAGE_EXTRA = {"cached_tokens": "INTEGER NOT NULL DEFAULT 0",
                "reasoning_tokens": "INTEGER NOT NULL DEFAULT 0", "cost": "REAL"}


class StoreError(Exception):
    """The session database cannot be opened or used (message names the file)."""


class UnknownSession(LookupError):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class SessionInfo:
    id: str
    project_root: str
    model: str
    title: str
    created: float
    updated: float
    message_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ToolCallRecord:
    message_seq: int
    call_id: str
    name: str
    arguments: dict[str, Any]
    source: str
    status: str
    decision: str | None
    rule: str | None
    reason: str
    edited: bool
    exit_code: int | None
    duration_ms: int | None
    result: str | None
    truncated: bool
    spool_path: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def default_path() -> Path:
    return paths.data_dir() / "sessions.db"


def new_session_id() -> str:
    return secrets.token_hex(4)  # 8 hex chars: short enough to type, 4e9 values


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

class Store:
    """The session database. Open with Store.open(); one instance per thread (see module doc)."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._db = conn
        self.path = path
        self._runs: dict[str, int] = {}
        # The last history read, as recorded, with what identifies the database state then:
        # resuming reads a session twice (for the model, then for the screen).
        self._last_read: tuple[tuple[str, int, Any], list[Message]] | None = None

    # ---- opening -------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path | str | None = None) -> Store:
        path = Path(path) if path else default_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists():
                # Sessions hold private conversations: owner-only (-wal/-shm copy this mode).
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
            conn = sqlite3.connect(path, isolation_level=None, timeout=5.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            store = cls(conn, path)
            with store._tx():
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:
                    raise StoreError(f"{path}: written by a newer kep (schema {version})")
                # executescript() would COMMIT our transaction first: run statements one by one.
                for statement in filter(str.strip, _SCHEMA.split(";\n")):
                    conn.execute(statement)
                have = {r[1] for r in conn.execute("PRAGMA table_info(usage)")}
                for column, kind in _USAGE_EXTRA.items():
                    if column not in have:
                        conn.execute(f"ALTER TABLE usage ADD COLUMN {column} {kind}")
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            return store
        except (sqlite3.Error, OSError) as e:
            raise StoreError(f"{path}: cannot open the session database: {e}") from e

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        # IMMEDIATE takes the write lock up front, so a busy peer makes us wait (timeout)
        # instead of failing half-way through.
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _one(self, sql: str, *params: Any) -> Any:
        row = self._db.execute(sql, params).fetchone()
        return row[0] if row else None

    # ---- sessions ------------------------------------------------------------------------

    def create_session(self, project_root: Path | str, model: str) -> str:
        now = time.time()
        root = str(Path(project_root).resolve())
        with self._tx() as db:
            sid = new_session_id()
            while self._one("SELECT 1 FROM sessions WHERE id=?", sid):
                sid = new_session_id()
            db.execute("INSERT INTO sessions (id, project_root, model, created, updated)"
                       " VALUES (?, ?, ?, ?, ?)", (sid, root, model, now, now))
        return sid

    def discard_if_empty(self, session_id: str) -> bool:
        """Delete a session that recorded nothing (a start that failed before anything was
        sent), so it does not show up in lists or `--continue`. True if it was deleted."""
        with self._tx() as db:
            if any(self._one(f"SELECT 1 FROM {table} WHERE session_id=? LIMIT 1", session_id)
                   for table in ("messages", "drafts", "tool_calls")):
                return False
            db.execute("DELETE FROM usage WHERE session_id=?", (session_id,))
            db.execute("DELETE FROM sessions WHERE id=?", (session_id,))
        return True

    def update_model(self, session_id: str, model: str) -> None:
        with self._tx() as db:
            db.execute("UPDATE sessions SET model=?, updated=? WHERE id=?",
                       (model, time.time(), session_id))

    def resolve_id(self, prefix: str) -> str:
        """The full id of the one session whose id starts with `prefix`."""
        prefix = prefix.strip().lower()
        if not prefix:
            raise UnknownSession("empty session id")
        rows = self._db.execute("SELECT id FROM sessions WHERE substr(id, 1, ?) = ?"
                                " ORDER BY id LIMIT 6", (len(prefix), prefix)).fetchall()
        if not rows:
            raise UnknownSession(f"no session {prefix!r} (`kep sessions list --all` lists them)")
        if len(rows) > 1:
            ids = ", ".join(r[0] for r in rows[:5]) + (", …" if len(rows) > 5 else "")
            raise UnknownSession(f"session id {prefix!r} is ambiguous: {ids}")
        return str(rows[0][0])

    def latest_session(self, project_root: Path | str) -> str | None:
        """The most recently updated session of a project, for --continue."""
        sid = self._one("SELECT id FROM sessions WHERE project_root=?"
                        " ORDER BY updated DESC, rowid DESC LIMIT 1",
                        str(Path(project_root).resolve()))
        return str(sid) if sid else None

    _INFO = """
        SELECT s.id, s.project_root, s.model, s.title, s.created, s.updated,
               (SELECT count(*) FROM messages m WHERE m.session_id = s.id)
                 + EXISTS (SELECT 1 FROM drafts d WHERE d.session_id = s.id),
               (SELECT coalesce(sum(input_tokens), 0) FROM usage u WHERE u.session_id = s.id),
               (SELECT coalesce(sum(output_tokens), 0) FROM usage u WHERE u.session_id = s.id)
        FROM sessions s"""
    _NEWEST = " ORDER BY s.updated DESC, s.rowid DESC LIMIT ?"

    def list_sessions(self, project_root: Path | str | None = None,
                      limit: int = 50) -> list[SessionInfo]:
        """Most recently updated first; one project's, or every project's when None."""
        if project_root is None:
            rows = self._db.execute(self._INFO + self._NEWEST, (limit,))
        else:
            root = str(Path(project_root).resolve())
            rows = self._db.execute(self._INFO + " WHERE s.project_root=?" + self._NEWEST,
                                    (root, limit))
        return [SessionInfo(*r) for r in rows.fetchall()]

    def session_info(self, session_id: str) -> SessionInfo:
        row = self._db.execute(self._INFO + " WHERE s.id=?", (session_id,)).fetchone()
        if row is None:
            raise UnknownSession(f"no session {session_id!r}")
        return SessionInfo(*row)

    # ---- reading a session ---------------------------------------------------------------

    def load_messages(self, session_id: str, *, for_resume: bool = True) -> list[Message]:
        """The history as recorded. A reply that was streaming when kep died comes back as an
        interrupted assistant message. With for_resume, it is the history the model saw (see
        history_for_model), valid to send again; without, everything as recorded."""
        # Unchanged since the last read: no commit here (total_changes), none by another
        # connection (data_version). Messages are frozen, so sharing them is safe.
        state = (session_id, self._db.total_changes, self._one("PRAGMA data_version"))
        if self._last_read is not None and self._last_read[0] == state:
            history = list(self._last_read[1])
        else:
            rows = self._db.execute("SELECT data FROM messages WHERE session_id=? ORDER BY seq",
                                    (session_id,)).fetchall()
            history = [Message.from_dict(json.loads(r[0])) for r in rows]
            self._last_read = (state, list(history))
        draft = self._draft_text(session_id)
        if draft is not None:
            history.append(Message("assistant", draft, interrupted=True))
        return history_for_model(history) if for_resume else history

    def session_usage(self, session_id: str) -> Usage:
        """The tokens (and cost, when priced) of every run of a session: what a resumed
        session starts its counter from."""
        row = self._db.execute(
            "SELECT coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),"
            " coalesce(sum(cached_tokens), 0), coalesce(sum(reasoning_tokens), 0), sum(cost)"
            " FROM usage WHERE session_id=?", (session_id,)).fetchone()
        return Usage(*row)

    def tool_calls(self, session_id: str) -> list[ToolCallRecord]:
        rows = self._db.execute(
            "SELECT message_seq, call_id, name, arguments, source, status, decision, rule, reason,"
            " edited, exit_code, duration_ms, result, truncated, spool_path"
            " FROM tool_calls WHERE session_id=? ORDER BY id", (session_id,)).fetchall()
        return [ToolCallRecord(r[0], r[1], r[2], json.loads(r[3]), r[4], r[5], r[6], r[7], r[8],
                               bool(r[9]), r[10], r[11], r[12], bool(r[13]), r[14]) for r in rows]

    def _draft_text(self, session_id: str) -> str | None:
        rows = self._db.execute("SELECT text FROM drafts WHERE session_id=? ORDER BY n",
                                (session_id,)).fetchall()
        return "".join(r[0] for r in rows) if rows else None

    # ---- writing -------------------------------------------------------------------------

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
                   (session_id, seq, json.dumps(message.to_dict(), ensure_ascii=False), now))

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
