"""File checkpoints (issue 28 item 5): before one of kep's file-writing built-ins runs, the
file it names is kept as it was (or "did not exist") in the session store, so `/undo` and a
rewind can put it back.

Restoring runs kep's own bundled `files` executable (its unlisted `restore_file`), so it goes
through the same confinement and write path as every write: never outside the root, and a link
swapped in at the path since the checkpoint is replaced, never written through. Only kep's
built-ins are checkpointed: files other tools changed are not restored (callers say so).
"""

from __future__ import annotations

import base64
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path

from tuiapp.security import policy, project_files
from tuiapp.vocab.events import Event, FileCheckpointed, ToolFinished
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

MAX_BYTES = 16 << 20  # a bigger file is not checkpointed (editfile refuses it too)
SCHEMA = """CREATE TABLE IF NOT EXISTS file_checkpoints (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    message_seq INTEGER NOT NULL,  -- messages in the session when the call was made
    path TEXT NOT NULL,
    existed INTEGER NOT NULL,
    content BLOB NOT NULL,
    restored INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL
)"""

Emit = Callable[[Event], None]
Execute = Callable[[ToolSpec, ToolCall, Emit], Awaitable[ToolFinished]]


@dataclass(frozen=True)
class Checkpoint:
    id: int
    call_id: str
    message_seq: int
    path: str
    existed: bool
    content: bytes


def capture(root: Path, spec: ToolSpec, call: ToolCall) -> FileCheckpointed | None:
    """The checkpoint of the file a file-writer call names; None for other tools, and for a
    path kep may not read (the built-in refuses those too)."""
    name = call.arguments.get("filename")
    if not policy.is_file_writer(spec) or not isinstance(name, str) or not name:
        return None
    try:
        real = project_files.confined(Path(root) / name, Path(root))
        data = project_files.read_bytes(real, MAX_BYTES, confine=Path(root))
    except (project_files.ProjectFileError, ValueError, OSError):
        return None
    rel = os.path.relpath(real, os.path.realpath(root))
    return FileCheckpointed(call.id, rel, data is not None, data or b"")


def checkpointing(execute: Execute, root: Path) -> Execute:
    """The executor with a checkpoint emitted before each file-writer call runs."""

    async def run(spec: ToolSpec, call: ToolCall, emit: Emit) -> ToolFinished:
        cp = capture(root, spec, call)
        if cp is not None:
            emit(cp)
        return await execute(spec, call, emit)

    return run


def ensure(db: sqlite3.Connection) -> None:
    db.execute(SCHEMA)


def save(db: sqlite3.Connection, session_id: str, ev: FileCheckpointed) -> None:
    ensure(db)
    seq = db.execute("SELECT count(*) FROM messages WHERE session_id=?",
                     (session_id,)).fetchone()[0]
    db.execute("INSERT INTO file_checkpoints (session_id, call_id, message_seq, path, existed,"
               " content, created) VALUES (?, ?, ?, ?, ?, ?, ?)",
               (session_id, ev.call_id, seq, ev.path, int(ev.existed), ev.content, time.time()))


def pending(db: sqlite3.Connection, session_id: str, *, after: int | None = None,
            last_call: bool = False) -> list[Checkpoint]:
    """Checkpoints not restored yet, newest first: all, those made once the session had more
    than `after` messages, or only the last call's."""
    ensure(db)
    rows = db.execute("SELECT id, call_id, message_seq, path, existed, content FROM "
                      "file_checkpoints WHERE session_id=? AND restored=0 ORDER BY id DESC",
                      (session_id,)).fetchall()
    out = [Checkpoint(r[0], r[1], r[2], r[3], bool(r[4]), bytes(r[5])) for r in rows]
    if after is not None:
        out = [c for c in out if c.message_seq > after]
    if last_call and out:
        out = [c for c in out if c.call_id == out[0].call_id]
    return out


def mark_restored(db: sqlite3.Connection, ids: list[int]) -> None:
    db.executemany("UPDATE file_checkpoints SET restored=1 WHERE id=?", [(i,) for i in ids])


def copy(db: sqlite3.Connection, source: str, target: str, upto: int) -> None:
    """A fork's checkpoints: those of the first `upto` messages."""
    ensure(db)
    db.execute("INSERT INTO file_checkpoints (session_id, call_id, message_seq, path, existed,"
               " content, restored, created) SELECT ?, call_id, message_seq, path, existed,"
               " content, restored, created FROM file_checkpoints WHERE session_id=? AND "
               "message_seq<=?", (target, source, upto))


def restore_call(cp: Checkpoint, writer: ToolSpec) -> tuple[ToolSpec, ToolCall]:
    """The call of kep's own `restore_file` that puts `cp` back (writer: a spec of kep's
    bundled `files`, e.g. its writefile)."""
    args: dict[str, object] = {"filename": cp.path}
    if cp.existed:
        args["base64_str"] = base64.b64encode(cp.content).decode("ascii")
    spec = replace(writer, name="restore_file", parameters={"type": "object"})
    return spec, ToolCall("restore-" + os.urandom(4).hex(), "restore_file", args)


NOT_RESTORED = ("files changed by other tools (execcmd, your own tools, MCP servers) are not "
                "restored")
