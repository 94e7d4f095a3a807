"""One live writer per session: an flock on <data dir>/locks/<session id>.lock.

The kernel drops an flock when its holder dies, however it dies, so a session left by a dead
kep is free at once and the next kep takes it over (sealing what the dead one left, as
begin_run does); there is no stale pid to guess about. The pid in the file is only for the
message. A second kep on a live session is refused before it writes anything, or continues in
a copy with --fork. The descriptor is close-on-exec: a tool never inherits the lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import time
import weakref
from pathlib import Path

from tuiapp.conversation.store import Store
from tuiapp.conversation.store_schema import StoreError

_held: dict[str, int] = {}  # lock file → descriptor, for the sessions this process writes


class SessionBusy(StoreError):
    def __init__(self, session_id: str, pid: int | None) -> None:
        self.session_id, self.pid = session_id, pid
        who = f"pid {pid}" if pid else "pid unknown"
        super().__init__(
            f"session {session_id} is open in another kep ({who}); "
            "--fork to continue in a copy"
        )


def lock_file(store: Store, session_id: str) -> Path:
    return store.path.parent / "locks" / f"{session_id}.lock"


def acquire(store: Store, session_id: str) -> None:
    """Become the session's one writer, or raise SessionBusy. Holding it already is fine."""
    path = lock_file(store, session_id)
    if str(path) in _held:
        return
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError as e:
        raise StoreError(f"{path}: cannot lock the session: {e.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO put there: not a lock file
        os.close(fd)
        raise StoreError(f"{path}: cannot lock the session: not a regular file")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _pid_in(fd)
        os.close(fd)
        raise SessionBusy(session_id, holder) from None
    except OSError:
        # A filesystem without flock (ENOLCK): go on unguarded rather than refuse every start.
        os.close(fd)
        return
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held[str(path)] = fd
    # Held as long as the store that writes is alive (the process, in kep itself).
    weakref.finalize(store, _drop, str(path))


def holds(store: Store, session_id: str) -> bool:
    """Whether this process is the session's writer."""
    return str(lock_file(store, session_id)) in _held


def release(store: Store, session_id: str) -> None:
    _drop(str(lock_file(store, session_id)))


def _drop(path: str) -> None:
    fd = _held.pop(path, None)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)  # the file stays: unlinking a lock file races with the next opener


def _pid_in(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def fork_session(store: Store, session_id: str) -> str:
    """A copy of the session under a new id, as recorded now (a reply still streaming in the
    original comes along as an interrupted reply). The original is not touched."""
    info = store.session_info(session_id)  # raises UnknownSession
    history = store.load_messages(session_id, for_resume=False)
    new_id = store.create_session(info.project_root, info.model)
    now = time.time()
    with store._tx() as db:
        for seq, message in enumerate(history, 1):
            db.execute(
                "INSERT INTO messages (session_id, seq, data, created) VALUES (?, ?, ?, ?)",
                (new_id, seq, json.dumps(message.to_dict(), ensure_ascii=False), now),
            )
        db.execute(
            "INSERT INTO tool_calls (session_id, message_seq, call_id, name, arguments, source,"
            " status, decision, rule, reason, edited, exit_code, duration_ms, result, truncated,"
            " spool_path, created, updated) SELECT ?, message_seq, call_id, name, arguments,"
            " source, status, decision, rule, reason, edited, exit_code, duration_ms, result,"
            " truncated, spool_path, created, ? FROM tool_calls WHERE session_id=? ORDER BY id",
            (new_id, now, session_id),
        )
        db.execute("UPDATE sessions SET title=? WHERE id=?",
                   (f"{info.title} (fork)".strip(), new_id))
    return new_id
