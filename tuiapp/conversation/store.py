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
enforces it). The TUI calls the store from its event-loop thread, except for huge events:
recorder.OrderedRecorder writes those from a thread with its own Store, and shows them once
they are committed. Other processes (`kep sessions` while the TUI writes) are fine: WAL
readers never block the writer.

Secrets: the store sees only events and messages, never provider config or headers, and
every value any statement writes passes the secrets filter first (FilteredConnection): no
write method can store a key by forgetting to.

The schema and its migration are in store_schema, the recording of events in store_recording;
making a recorded history valid to send again is session_history.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuiapp.conversation import session_search
from tuiapp.conversation.session_history import history_for_model
from tuiapp.conversation.store_recording import EventRecording
from tuiapp.conversation.store_schema import StoreError, default_path, migrate
from tuiapp.security import secrets as secrets_filter
from tuiapp.vocab.events import Usage
from tuiapp.vocab.messages import Message


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


_WRITES = re.compile(r"\s*(INSERT|UPDATE|REPLACE)\b", re.I)


class FilteredConnection(sqlite3.Connection):
    """A connection whose writes pass every text parameter through the secrets filter (JSON
    text as JSON, so a label never cuts an escape)."""

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if parameters and _WRITES.match(sql):
            parameters = _filtered(parameters)
        return super().execute(sql, parameters)

    def executemany(self, sql: str, seq: Any, /) -> sqlite3.Cursor:
        if _WRITES.match(sql):
            seq = [_filtered(p) for p in seq]
        return super().executemany(sql, seq)


def _filtered(parameters: Any) -> Any:
    s = secrets_filter.active()
    if isinstance(parameters, Mapping):
        return {k: secrets_filter.redact_json_text(v, s) if isinstance(v, str) else v
                for k, v in parameters.items()}
    return tuple(secrets_filter.redact_json_text(v, s) if isinstance(v, str) else v
                 for v in parameters)


def new_session_id() -> str:
    return secrets.token_hex(4)  # 8 hex chars: short enough to type, 4e9 values


class Store(EventRecording):
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
            conn = sqlite3.connect(path, isolation_level=None, timeout=5.0,
                                   factory=FilteredConnection)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            store = cls(conn, path)
            with store._tx():
                migrate(conn, path)
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

    def search(self, words: str, project_root: Path | str | None = None,
               limit: int = session_search.DEFAULT_LIMIT) -> list[session_search.SearchHit]:
        """Messages holding every word, best first (session_search; SearchError for a line)."""
        root = None if project_root is None else str(Path(project_root).resolve())
        return session_search.search(self._db, words, root, limit)

    def _draft_text(self, session_id: str) -> str | None:
        rows = self._db.execute("SELECT text FROM drafts WHERE session_id=? ORDER BY n",
                                (session_id,)).fetchall()
        return "".join(r[0] for r in rows) if rows else None
