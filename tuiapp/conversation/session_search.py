"""Full-text search over every recorded message (`kep sessions search`, `/search`).

What the user types is never FTS5 query syntax: each word becomes a quoted phrase (quotes
doubled), so `NEAR`, `AND`, `-`, `:`, `(` and an unbalanced `"` are plain words. A word ending
in `*` keeps its meaning as a prefix (of 3 letters or more). The words must all appear
(implicit AND); hits come best first by bm25, among the newest CANDIDATES matches when more
match (_ranked). The index (store_schema) holds the store's text, already redacted.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from tuiapp.conversation.store_schema import MARK_CLOSE, MARK_OPEN

DEFAULT_LIMIT = 20
SNIPPET_TOKENS = 16
MIN_PREFIX = 3
MAX_WORDS = 32  # a pasted paragraph is not a search; more words only slow the query
_WORD = re.compile(r"\w", re.UNICODE)
_PREFIX_TERM = re.compile(r'"\*(?: |$)')  # a term of fts_query's that is a prefix
_TOKEN = re.compile(r"\w+", re.UNICODE)  # the prefix is the last token's


class SearchError(ValueError):
    """The search cannot run; the message is one line for the user."""


@dataclass(frozen=True)
class SearchHit:
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
        if prefix and len(_TOKEN.findall(word)[-1]) < MIN_PREFIX:
            # "s*" means every word starting with s: FTS5 merges thousands of words' lists
            # (1.4 s over a million messages); three letters keep it to a few.
            raise SearchError(f"a prefix needs at least {MIN_PREFIX} letters before its *")
        terms.append('"' + word.replace('"', '""') + '"' + ("*" if prefix else ""))
    if not terms:
        raise SearchError("nothing to search for: give at least one word")
    return " ".join(terms)


def search(db: sqlite3.Connection, words: str, project_root: str | None = None,
           limit: int = DEFAULT_LIMIT) -> list[SearchHit]:
    """The best `limit` messages holding every word, in one project or (None) all."""
    query = fts_query(words)
    try:
        ranked = _ranked(db, query, project_root, max(1, limit))
        if not ranked:
            return []
        snippets = _snippets(db, query, [r[0] for r in ranked])
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            raise SearchError("search is not available: this SQLite has no FTS5") from e
        raise SearchError(f"the search failed: {e}") from e
    return [SearchHit(sid, seq, role, created, title, root, rank, pieces(snippets.get(rowid, "")))
            for rowid, rank, sid, seq, created, role, title, root in ranked]


# A search matching more messages than this ranks the newest this many of them: bm25 scores
# every row it ranks (~3 µs each), so a word in 900,000 messages took 2.6 s to rank in full.
CANDIDATES = 10_000
_FIRST = -(2**63)  # below every rowid: no bound
_RANKED = ("SELECT r.rowid, r.rank, m.session_id, m.seq, m.created, "
           "coalesce(json_extract(m.data, '$.role'), ''), s.title, s.project_root FROM "
           "({inner}) r JOIN messages m ON m.rowid = r.rowid JOIN sessions s ON "
           "s.id = m.session_id {where} ORDER BY r.rank, r.rowid DESC")
_BY_RANK = ("SELECT rowid, rank FROM message_search WHERE message_search MATCH ? AND "
            "rowid >= ? {also} ORDER BY rank, rowid DESC LIMIT ?")
_ALSO = ("AND +rowid IN (SELECT rowid FROM message_search WHERE message_search MATCH ? AND "
         "rowid >= ?)")
_NEWEST = ("SELECT rowid, 0.0 AS rank FROM message_search WHERE message_search MATCH ? AND "
           "rowid >= ? ORDER BY rowid DESC LIMIT ?")
# Beyond the bound, a word in more than this share of the newest messages is left out of the
# ranking (see _rank_query), judged on its newest SAMPLE occurrences (±2% at that size; bm25
# gives a word in over half the messages no weight, and one in 45% only a twentieth of a
# word in 1%).
DENSE, SAMPLE = 0.55, 1_000


def _ranked(db: sqlite3.Connection, query: str, project_root: str | None,
            limit: int) -> list[Any]:
    """The best `limit` hits among the newest CANDIDATES matches (all of them when fewer
    match; equal ranks newest first). In one project, look ten times further back while
    too few of the candidates were this project's."""
    candidates = CANDIDATES
    while True:
        low = _oldest_candidate(db, query, candidates)
        inner = _inner(query, _rank_query(db, query, low), low)
        rows = _ranked_since(db, query, inner, project_root, limit, low)
        if len(rows) >= limit or low == _FIRST:
            return rows
        candidates *= 10


def _rank_query(db: sqlite3.Connection, query: str, low: int) -> str | None:
    """What to rank by: the query, or beyond the bound the query without its words that are
    in most messages, None when that leaves nothing (then newest first). bm25 weighs a word
    in over half the messages at 1e-6, yet first counts the messages holding it: one pass over
    its whole list for every such word (~65 ms for "the" in a million messages)."""
    if low == _FIRST:
        return query
    newest = db.execute("SELECT max(rowid) FROM messages").fetchone()[0] or 0
    kept = []
    for term in query.split(" "):  # fts_query's terms: quoted, so never holding a space
        if not term.endswith("*"):  # a prefix's sample would merge its words: keep it
            row = db.execute("SELECT rowid FROM message_search WHERE message_search MATCH ? "
                             "ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                             (term, SAMPLE - 1)).fetchone()
            if row is not None and SAMPLE / (newest - row[0] + 1) > DENSE:
                continue
        kept.append(term)
    return " ".join(kept) or None


def _inner(query: str, rank_query: str | None, low: int) -> tuple[str, list[Any]]:
    """The ranked matches from rowid `low` on (SQL, parameters before the LIMIT)."""
    if rank_query is None:
        return _NEWEST, [query, low]
    if rank_query == query:
        return _BY_RANK.format(also=""), [query, low]
    return _BY_RANK.format(also=_ALSO), [rank_query, low, query, low]


def _oldest_candidate(db: sqlite3.Connection, query: str, candidates: int) -> int:
    """The lowest rowid of the newest `candidates` matches; _FIRST when no more match. FTS5
    walks its index newest first and stops there: cheap next to ranking."""
    row = db.execute("SELECT rowid FROM message_search WHERE message_search MATCH ? "
                     "ORDER BY rowid DESC LIMIT 1 OFFSET ?", (query, candidates)).fetchone()
    return _FIRST if row is None else row[0] + 1


def _ranked_since(db: sqlite3.Connection, query: str, inner: tuple[str, list[Any]],
                  project_root: str | None, limit: int, low: int) -> list[Any]:
    """The best `limit` hits from rowid `low` on. FTS5 ranks fastest on its own (no join per
    match): rank a window of the best matches, then keep this project's; widen the window
    tenfold while it was full and too few were this project's."""
    sql, params = inner
    if project_root is None:
        return db.execute(_RANKED.format(inner=sql, where=""), (*params, limit)).fetchall()
    window = limit * 20
    while True:
        rows = db.execute(_RANKED.format(inner=sql, where="WHERE s.project_root = ?"),
                          (*params, window, project_root)).fetchall()
        if len(rows) >= limit:
            return rows[:limit]
        total = db.execute("SELECT count(*) FROM (SELECT 1 FROM message_search WHERE "
                           "message_search MATCH ? AND rowid >= ? LIMIT ?)",
                           (query, low, window)).fetchone()[0]
        if total < window:
            return rows  # every match was looked at
        window *= 10


def _snippets(db: sqlite3.Connection, query: str, rowids: list[int]) -> dict[int, str]:
    """Snippets for the rows shown only (a snippet reads the message back and tokenizes it).
    `rowid IN` makes FTS5 run the query once per row, which for a prefix merges every word
    with that prefix each time (20 hits of `con*`: ~1 s); a prefix query walks the hits'
    rowid range once instead (`+rowid` keeps the list a filter, not a lookup)."""
    marks = ",".join("?" * len(rowids))
    where = f"rowid IN ({marks})"
    params: list[Any] = [MARK_OPEN, MARK_CLOSE, query]
    if _PREFIX_TERM.search(query):
        where = f"rowid BETWEEN ? AND ? AND +rowid IN ({marks})"
        params += [min(rowids), max(rowids)]
    return dict(db.execute(
        f"SELECT rowid, snippet(message_search, 0, ?, ?, '…', {SNIPPET_TOKENS}) "
        f"FROM message_search WHERE message_search MATCH ? AND {where}",
        (*params, *rowids)).fetchall())


def pieces(snippet: str) -> tuple[tuple[str, bool], ...]:
    """Split a snippet at our marks into (text, highlighted) pieces."""
    out: list[tuple[str, bool]] = []
    for i, part in enumerate(re.split(f"[{MARK_OPEN}{MARK_CLOSE}]", snippet)):
        if part:
            out.append((part, i % 2 == 1))
    return tuple(out)
