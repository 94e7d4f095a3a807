"""The session database's schema and its migration on open.

SCHEMA_VERSION goes in PRAGMA user_version; a file from a newer kep is refused. Columns added
since schema 1 are added with ALTER TABLE on open (additive: older kep versions ignore them).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tuiapp.settings import paths

SCHEMA_VERSION = 1

SCHEMA = """
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
USAGE_EXTRA = {"cached_tokens": "INTEGER NOT NULL DEFAULT 0",
                "reasoning_tokens": "INTEGER NOT NULL DEFAULT 0", "cost": "REAL"}


class StoreError(Exception):
    """The session database cannot be opened or used (message names the file)."""


def default_path() -> Path:
    return paths.data_dir() / "sessions.db"


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Create the tables and add missing columns; run inside the caller's transaction."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise StoreError(f"{path}: written by a newer kep (schema {version})")
    # executescript() would COMMIT the caller's transaction first: run statements one by one.
    for statement in filter(str.strip, SCHEMA.split(";\n")):
        conn.execute(statement)
    have = {r[1] for r in conn.execute("PRAGMA table_info(usage)")}
    for column, kind in USAGE_EXTRA.items():
        if column not in have:
            conn.execute(f"ALTER TABLE usage ADD COLUMN {column} {kind}")
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
