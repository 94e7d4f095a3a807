"""The session database's schema and its migration on open.

SCHEMA_VERSION goes in PRAGMA user_version; a file from a newer kep is refused. Columns added
since schema 1 are added with ALTER TABLE on open (additive: older kep versions ignore them).

Search: `message_search` is an FTS5 index of every message's text, keyed by the message's
rowid and kept in step by triggers on `messages` (so every writer, older kep versions
included, keeps it in sync). It indexes what the store holds, which has already passed the
secrets filter. A database from before search is indexed once, on open (ensure_search).
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


# The snippet's highlight marks (Unicode private use): removed from the indexed text, so a
# mark in a snippet is always ours.
MARK_OPEN, MARK_CLOSE = "\ue000", "\ue001"
_TEXT = ("replace(replace(CASE json_type({row}.data, '$.content') WHEN 'text' THEN "
         "json_extract({row}.data, '$.content') ELSE '' END, char(57344), ''), char(57345), '')")
# The index reads the text back through this view (an external-content table: the text is
# not stored twice; snippets read it from the messages).
SEARCH_VIEW = (f"CREATE VIEW IF NOT EXISTS message_text AS SELECT m.rowid AS id, "
               f"{_TEXT.format(row='m')} AS text FROM messages m")
SEARCH_TABLE = ("CREATE VIRTUAL TABLE message_search USING fts5(text, content='message_text', "
                "content_rowid='id', tokenize='unicode61 remove_diacritics 2')")
_ADD = "INSERT INTO message_search (rowid, text) VALUES (new.rowid, {0});"
_DEL = ("INSERT INTO message_search (message_search, rowid, text) "
        "VALUES ('delete', old.rowid, {0});")
SEARCH_TRIGGERS = (
    "CREATE TRIGGER IF NOT EXISTS message_search_add AFTER INSERT ON messages BEGIN "
    + _ADD.format(_TEXT.format(row="new")) + " END",
    "CREATE TRIGGER IF NOT EXISTS message_search_del AFTER DELETE ON messages BEGIN "
    + _DEL.format(_TEXT.format(row="old")) + " END",
    "CREATE TRIGGER IF NOT EXISTS message_search_upd AFTER UPDATE OF data ON messages BEGIN "
    + _DEL.format(_TEXT.format(row="old")) + " " + _ADD.format(_TEXT.format(row="new")) + " END",
)


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
    ensure_search(conn)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


def ensure_search(conn: sqlite3.Connection) -> None:
    """Create the search index and its triggers; index what is already there (an upgrade).
    Additive, like the columns above: no schema version bump, so an older kep still opens the
    file (and its writes keep the index in step through the triggers)."""
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE name='message_search'").fetchone()
    if not exists:
        try:
            conn.execute(SEARCH_VIEW)
            conn.execute(SEARCH_TABLE)
        except sqlite3.OperationalError:
            return  # an SQLite without FTS5: search says so; nothing else changes
        conn.execute("INSERT INTO message_search (message_search) VALUES ('rebuild')")
    for trigger in SEARCH_TRIGGERS:
        conn.execute(trigger)
