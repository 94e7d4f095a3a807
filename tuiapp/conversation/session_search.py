"""Full-text search over every recorded message (`kep sessions search`, `/search`).

What the user types is never FTS5 query syntax: each word becomes a quoted phrase (quotes
doubled), so `NEAR`, `AND`, `-`, `:`, `(` and an unbalanced `"` are plain words. A word ending
in `*` keeps its meaning as a prefix. The words must all appear (implicit AND); hits come
best first by bm25. The index (store_schema) holds the store's text, already redacted.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from tuiapp.conversation.store_schema import MARK_CLOSE, MARK_OPEN

DEFAULT_LIMIT = 20
SNIPPET_TOKENS = 16
MAX_WORDS = 32  # a pasted paragraph is not a search; more words only slow the query
_WORD = re.compile(r"\w", re.UNICODE)


class SearchError(ValueError):
    """The search cannot run; the message is one line for the user."""


@dataclass(frozen=True)
class Hit:
    session_id: str
    seq: int  # the message's number in its session (1-based, as stored)
    role: str
    created: float
    title: str
    project_root: str
    rank: float
    # The snippet as (text, highlighted) pieces, raw: the caller shows them through the
    # display edge (security.display), never as markup.
    pieces: tuple[tuple[str, bool], ...] = field(default=())

    @property
    def snippet(self) -> str:
        return "".join(text for text, _ in self.pieces)

    def to_dict(self) -> dict[str, Any]:
        return {"session": self.session_id, "message": self.seq, "role": self.role,
                "time": self.created, "title": self.title, "project": self.project_root,
                "rank": self.rank, "snippet": self.snippet,
                "highlights": [text for text, lit in self.pieces if lit]}


def clean(words: str) -> str:
    """Text any input can become: invalid UTF-8 (surrogate escapes from argv) turns into �."""
    return words.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def fts_query(words: str) -> str:
    """The FTS5 query for what the user typed: every word a quoted phrase, all required."""
    terms = []
    for word in clean(words).split()[:MAX_WORDS]:
        prefix = word.endswith("*")
        word = word.rstrip("*")
        if not _WORD.search(word):
            continue  # only punctuation: the tokenizer would give nothing to find
        terms.append('"' + word.replace('"', '""') + '"' + ("*" if prefix else ""))
    if not terms:
        raise SearchError("nothing to search for: give at least one word")
    return " ".join(terms)


def search(db: sqlite3.Connection, words: str, project_root: str | None = None,
           limit: int = DEFAULT_LIMIT) -> list[Hit]:
    """The best `limit` messages holding every word, in one project or (None) all."""
    query = fts_query(words)
    where = "message_search MATCH ?"
    params: list[Any] = [query]
    if project_root is not None:
        where += " AND s.project_root = ?"
        params.append(project_root)
    try:
        # Rank first, then snippets for the few rows kept (a snippet reads the message back).
        ranked = db.execute(
            "SELECT message_search.rowid, rank, m.session_id, m.seq, m.created, "
            "coalesce(json_extract(m.data, '$.role'), ''), s.title, s.project_root "
            "FROM message_search JOIN messages m ON m.rowid = message_search.rowid "
            f"JOIN sessions s ON s.id = m.session_id WHERE {where} ORDER BY rank LIMIT ?",
            (*params, max(1, limit))).fetchall()
        if not ranked:
            return []
        marks = ",".join("?" * len(ranked))
        snippets = dict(db.execute(
            f"SELECT rowid, snippet(message_search, 0, ?, ?, '…', {SNIPPET_TOKENS}) "
            f"FROM message_search WHERE message_search MATCH ? AND rowid IN ({marks})",
            (MARK_OPEN, MARK_CLOSE, query, *(r[0] for r in ranked))).fetchall())
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            raise SearchError("search is not available: this SQLite has no FTS5") from e
        raise SearchError(f"the search failed: {e}") from e
    return [Hit(sid, seq, role, created, title, root, rank, pieces(snippets.get(rowid, "")))
            for rowid, rank, sid, seq, created, role, title, root in ranked]


def pieces(snippet: str) -> tuple[tuple[str, bool], ...]:
    """Split a snippet at our marks into (text, highlighted) pieces."""
    out: list[tuple[str, bool]] = []
    for i, part in enumerate(re.split(f"[{MARK_OPEN}{MARK_CLOSE}]", snippet)):
        if part:
            out.append((part, i % 2 == 1))
    return tuple(out)
