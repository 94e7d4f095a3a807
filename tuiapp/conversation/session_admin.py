"""Looking after saved sessions: delete, prune by age, rename, and which one `--continue`
reopens (the one last open in the project, not merely the one updated last)."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

from tuiapp.conversation import checkpoints, project_marks
from tuiapp.conversation.session_history import make_title
from tuiapp.conversation.store import SessionInfo, Store, UnknownSession
from tuiapp.conversation.store_schema import StoreError
from tuiapp.settings import paths

_TABLES = ("messages", "drafts", "tool_calls", "usage", "file_checkpoints")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
LAST_OPEN = "last-session"


def parse_age(text: str) -> float:
    """`30d`, `12h`, `2w`, `90m`, `45s` → seconds. ValueError with a readable message."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text or "")
    if not m:
        raise ValueError(f"not an age: {text!r} (use e.g. 30d, 12h, 2w, 90m)")
    return float(m.group(1)) * _UNITS[m.group(2)]


def delete(store: Store, session_ids: list[str]) -> dict[str, str]:
    """Remove the sessions, everything recorded in them, and their spool files. A session
    another live kep is writing is left alone: returned as {id: why} (one writer per session;
    deleting under it would leave that kep writing into nothing)."""
    from tuiapp.conversation import session_lock

    refused: dict[str, str] = {}
    taken: list[str] = []
    for sid in session_ids:
        if session_lock.holds(store, sid):
            continue  # this kep's own session: its caller decided
        try:
            session_lock.acquire(store, sid)
            taken.append(sid)
        except StoreError as e:
            refused[sid] = str(e)
    session_ids = [sid for sid in session_ids if sid not in refused]
    with store._tx() as db:
        checkpoints.ensure(db)
        for sid in session_ids:
            for table in _TABLES:
                db.execute(f"DELETE FROM {table} WHERE session_id=?", (sid,))
            db.execute("DELETE FROM sessions WHERE id=?", (sid,))
    spool = paths.data_dir() / "spool"
    for sid in session_ids:
        shutil.rmtree(spool / sid, ignore_errors=True)
    for sid in taken:
        session_lock.release(store, sid)
    return refused


def in_use(store: Store, session_ids: list[str]) -> dict[str, str]:
    """The sessions of these that another live kep is writing, {id: why}: what `delete`
    would refuse (a dry run says the same as the real one)."""
    from tuiapp.conversation import session_lock

    busy: dict[str, str] = {}
    for sid in session_ids:
        if session_lock.holds(store, sid):
            continue
        try:
            session_lock.acquire(store, sid)
        except StoreError as e:
            busy[sid] = str(e)
        else:
            session_lock.release(store, sid)
    return busy


def older_than(store: Store, age_seconds: float, project_root: Path | None) -> list[SessionInfo]:
    """Sessions (of one project, or of all when None) not updated for `age_seconds`."""
    cutoff = time.time() - age_seconds
    every = store.list_sessions(project_root, limit=1_000_000)
    return [s for s in every if s.updated < cutoff]


def rename(store: Store, session_id: str, title: str) -> str:
    title = make_title(title)
    if not title:
        raise UnknownSession("a title needs at least one visible character")
    with store._tx() as db:
        db.execute("UPDATE sessions SET title=? WHERE id=?", (title, session_id))
    return title


def remember_open(project_root: Path, session_id: str | None) -> None:
    if session_id:
        project_marks.put(LAST_OPEN, project_root, session_id)


def continue_target(store: Store, project_root: Path) -> str | None:
    """The session last open in this project if it still exists, else the newest one."""
    sid = project_marks.get(LAST_OPEN, project_root)
    if sid:
        try:
            info = store.session_info(sid)
        except UnknownSession:
            info = None
        if info is not None and Path(info.project_root) == project_root.resolve():
            return sid
    return store.latest_session(project_root)


def fork(store: Store, session_id: str, upto: int) -> str:
    """A new session holding the first `upto` messages of `session_id` (and the tool calls
    and file checkpoints made within them). The original is kept as it was."""
    info = store.session_info(session_id)
    if upto < 0 or upto > info.message_count:
        raise ValueError(f"--at must be between 0 and {info.message_count} (the messages of "
                         f"session {session_id})")
    new = store.create_session(info.project_root, info.model)
    with store._tx() as db:
        db.execute("INSERT INTO messages (session_id, seq, data, created) SELECT ?, seq, data, "
                   "created FROM messages WHERE session_id=? AND seq IN (SELECT seq FROM "
                   "messages WHERE session_id=? ORDER BY seq LIMIT ?)",
                   (new, session_id, session_id, upto))
        last = db.execute("SELECT max(seq) FROM messages WHERE session_id=?",
                          (new,)).fetchone()[0]
        db.execute("INSERT INTO tool_calls (session_id, message_seq, call_id, name, arguments,"
                   " source, status, decision, rule, reason, edited, exit_code, duration_ms,"
                   " result, truncated, spool_path, created, updated) SELECT ?, message_seq,"
                   " call_id, name, arguments, source, status, decision, rule, reason, edited,"
                   " exit_code, duration_ms, result, truncated, '', created, updated FROM"
                   " tool_calls WHERE session_id=? AND message_seq<=?",
                   (new, session_id, -1 if last is None else last))
        checkpoints.copy(db, session_id, new, upto)
        db.execute("UPDATE sessions SET title=? WHERE id=?",
                   (f"{info.title or '(no message)'} (fork of {session_id} at {upto})"[:200],
                    new))
    return new
