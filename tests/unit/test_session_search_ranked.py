"""The fast search path gives what the plain one gives: on a corpus smaller than the
candidate bound, every kind of query, in one project and in all, returns the same hits in the
same order with the same snippets as a full join ranked by bm25 (the search before the
bound). Beyond the bound the best of the newest matches are shown, and a project whose only
hits are old still finds them. A prefix needs three letters (one line, never a traceback)."""

from __future__ import annotations

import random
import sqlite3
import subprocess
from pathlib import Path

import pytest
from conftest import KEP, kep_env

from tuiapp.conversation import session_search
from tuiapp.conversation.session_search import SearchError, fts_query, pieces
from tuiapp.conversation.store import Store
from tuiapp.conversation.store_schema import MARK_CLOSE, MARK_OPEN
from tuiapp.vocab.events import MessageAdded
from tuiapp.vocab.messages import Message

WORDS = ["alpha", "beta", "gamma", "delta", "config", "configure", "confine", "server",
         "error", "the", "kettle", "log", "rotate", "zebra"]
QUERIES = ["the", "kettle", "config server", "con*", "conf* error", "the error log",
           "zebra alpha beta", "nothinghere", "err* the*", 'NEAR(the "log -x:y']


def add(store: Store, sid: str, role: str, text: str) -> None:
    store.record(sid, MessageAdded(Message(role, text)))  # type: ignore[arg-type]


def plain(db: sqlite3.Connection, words: str, project: str | None,
          limit: int) -> list[tuple[object, ...]]:
    """The search as it was before the bound: one full join ranked by bm25 (equal ranks
    newest first), and each hit's snippet asked for by its rowid alone."""
    query = fts_query(words)
    where, params = ("AND s.project_root = ?", [project]) if project else ("", [])
    rows = db.execute(
        "SELECT f.rowid, f.rank, m.session_id, m.seq, m.created, json_extract(m.data, "
        "'$.role'), s.title, s.project_root FROM message_search f JOIN messages m ON "
        "m.rowid = f.rowid JOIN sessions s ON s.id = m.session_id WHERE f.message_search "
        f"MATCH ? {where} ORDER BY f.rank, f.rowid DESC LIMIT ?",
        (query, *params, limit)).fetchall()
    out = []
    for rowid, *rest in rows:
        snippet = db.execute(
            "SELECT snippet(message_search, 0, ?, ?, '…', ?) FROM message_search "
            "WHERE message_search MATCH ? AND rowid = ?",
            (MARK_OPEN, MARK_CLOSE, session_search.SNIPPET_TOKENS, query, rowid)).fetchone()[0]
        out.append((*rest, pieces(snippet)))
    return out


def fast(store: Store, words: str, project: str | None, limit: int) -> list[tuple[object, ...]]:
    return [(h.rank, h.session_id, h.seq, h.created, h.role, h.title, h.project_root, h.pieces)
            for h in store.search(words, project, limit)]


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Store, list[str]]:
    """Three projects (one small), 600 messages of Zipf-ish words with many equal ranks, a
    2 MB message, control sequences and markup."""
    rnd = random.Random(3)
    roots = []
    for name in ("one", "two", "small"):
        (tmp_path / name).mkdir()
        roots.append(str((tmp_path / name).resolve()))
    store = Store.open(tmp_path / "s.db")
    small = store.create_session(Path(roots[2]), "offline")  # the oldest messages
    add(store, small, "user", "the kettle error \x1b[2J\x1b]0;owned\x07 [bold]config[/] server")
    add(store, small, "tool", "filler " * 300_000 + "configure the server log at the end")
    weights = [1 / (i + 1) for i in range(len(WORDS))]
    for s in range(30):
        sid = store.create_session(Path(roots[0] if s % 2 else roots[1]), "offline")
        for m in range(20):
            text = " ".join(rnd.choices(WORDS, weights, k=rnd.choice((1, 2, 3, 8, 30))))
            add(store, sid, ("user", "assistant", "tool")[m % 3], text)
    return store, roots


@pytest.mark.parametrize("limit", [1, 5, 20, 1000])
def test_the_fast_path_gives_what_the_plain_one_gives(corpus: tuple[Store, list[str]],
                                                      limit: int) -> None:
    store, roots = corpus
    with store:
        for words in QUERIES:
            for project in (*roots, None):
                assert fast(store, words, project, limit) == plain(
                    store._db, words, project, limit), (words, project, limit)


def test_beyond_the_bound_the_newest_matches_are_ranked(corpus: tuple[Store, list[str]],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    store, roots = corpus
    monkeypatch.setattr(session_search, "CANDIDATES", 7)
    with store:
        db = store._db
        query = fts_query("the")
        newest = [r[0] for r in db.execute(
            "SELECT rowid FROM message_search WHERE message_search MATCH ? "
            "ORDER BY rowid DESC LIMIT 7", (query,))]
        expect = [r[0] for r in db.execute(
            "SELECT rowid FROM message_search WHERE message_search MATCH ? AND rowid >= ? "
            "ORDER BY rank, rowid DESC LIMIT 5", (query, min(newest)))]
        got = [db.execute("SELECT rowid FROM messages WHERE session_id = ? AND seq = ?",
                          (h.session_id, h.seq)).fetchone()[0]
               for h in store.search("the", None, 5)]
        assert got == expect
        # The small project's hits are older than the newest 7 of the others: still found.
        assert len(store.search("the", roots[2], 5)) == 2
        # One project's hits: looks further back until it has enough.
        assert len(store.search("the", roots[0], 20)) == 20


@pytest.mark.parametrize("words", ["s*", "ab*", "é*", "x-y*", "the s*", '"a*'])
def test_a_short_prefix_is_one_line(words: str) -> None:
    with pytest.raises(SearchError, match="at least 3 letters") as e:
        fts_query(words)
    assert "\n" not in str(e.value)


def test_a_short_prefix_from_the_command_line(tmp_path: Path) -> None:
    res = subprocess.run([*KEP, "sessions", "search", "s*", "--project", str(tmp_path)],
                         capture_output=True, text=True, env=kep_env(), timeout=60)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert "at least 3 letters" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_beyond_the_bound_words_in_most_messages_do_not_rank(
        corpus: tuple[Store, list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    """bm25 gives a word in over half the messages no weight but counts them all first; beyond
    the bound such a word still has to be there but ranks nothing (all such words: newest
    first)."""
    store, _ = corpus
    monkeypatch.setattr(session_search, "CANDIDATES", 7)
    monkeypatch.setattr(session_search, "SAMPLE", 5)
    with store:
        db = store._db

        def rowids(words: str) -> list[int]:
            return [db.execute("SELECT rowid FROM messages WHERE session_id = ? AND seq = ?",
                               (h.session_id, h.seq)).fetchone()[0]
                    for h in store.search(words, None, 5)]

        full = fts_query("alpha kettle")
        newest = [r[0] for r in db.execute(
            "SELECT rowid FROM message_search WHERE message_search MATCH ? "
            "ORDER BY rowid DESC LIMIT 7", (full,))]
        assert session_search._rank_query(db, full, min(newest)) == '"kettle"'
        ranks = dict(db.execute("SELECT rowid, rank FROM message_search WHERE "
                                "message_search MATCH '\"kettle\"'").fetchall())
        assert rowids("alpha kettle") == sorted(newest, key=lambda r: (ranks[r], -r))[:5]
        newest_alpha = [r[0] for r in db.execute(
            "SELECT rowid FROM message_search WHERE message_search MATCH '\"alpha\"' "
            "ORDER BY rowid DESC LIMIT 5")]
        assert rowids("alpha") == newest_alpha
        assert {h.rank for h in store.search("alpha", None, 5)} == {0.0}
        assert all(("alpha", True) in h.pieces for h in store.search("alpha", None, 5))


def test_hostile_words_beyond_the_bound(corpus: tuple[Store, list[str]],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from test_session_search import HOSTILE

    store, roots = corpus
    monkeypatch.setattr(session_search, "CANDIDATES", 1)
    monkeypatch.setattr(session_search, "SAMPLE", 1)
    with store:
        for words in [*HOSTILE, "the NEAR(the", 'alpha "alpha -alpha:alpha', "con* the"]:
            for project in (roots[0], None):
                try:
                    store.search(words, project)
                except SearchError as e:
                    assert "\n" not in str(e) and "failed" not in str(e), (words, e)
