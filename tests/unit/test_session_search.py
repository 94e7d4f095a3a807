"""Search across sessions: FTS5 ranked hits with session, time and a highlighted snippet; the
index follows every write and delete, an older database is indexed on open, what is
indexed is the redacted text, and no query a user can type raises."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
from conftest import KEP, kep_env

from tuiapp.conversation import session_admin
from tuiapp.conversation.session_search import SearchError, fts_query
from tuiapp.conversation.store import Store
from tuiapp.vocab.events import MessageAdded
from tuiapp.vocab.messages import Message

HOSTILE = ['"', 'say "hi', "NEAR(a b)", "a NEAR b", "*", "foo*", "-x", "a -b", "x:y", "(", ")",
           "AND", "OR NOT", "^start", "{a b}", "col : x", '""', "'", "\x00", "\x1b[31m",
           "caf\udcc3", "a" * 5000, "🙂", "\\", "a+b", "NEAR/3", "\t\n"]


def kep(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KEP, *argv], capture_output=True, text=True, env=kep_env(),
                          timeout=60)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "p").mkdir()
    return (tmp_path / "p").resolve()


def add(store: Store, sid: str, role: str, text: str) -> None:
    store.record(sid, MessageAdded(Message(role, text)))  # type: ignore[arg-type]


def test_ranked_hits_with_session_time_and_snippet(tmp_path: Path, root: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        a = store.create_session(root, "offline")
        add(store, a, "user", "how do I rotate the kettle logs")
        add(store, a, "assistant", "kettle kettle kettle: use logrotate for kettle")
        b = store.create_session(root, "offline")
        add(store, b, "user", "nothing to see here")
        hits = store.search("kettle", root)
    assert [(h.session_id, h.seq) for h in hits] == [(a, 2), (a, 1)]  # bm25: denser first
    assert hits[0].role == "assistant" and hits[0].created > 0
    assert ("kettle", True) in hits[0].pieces
    assert "logrotate" in hits[0].snippet


def test_words_are_all_required_and_prefix_works(tmp_path: Path, root: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        a = store.create_session(root, "offline")
        add(store, a, "user", "alpha beta")
        add(store, a, "user", "alpha gamma")
        assert [h.seq for h in store.search("alpha beta", root)] == [1]
        assert len(store.search("gam*", root)) == 1
        assert store.search("delta", root) == []


def test_project_scope_and_all(tmp_path: Path, root: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    with Store.open(tmp_path / "s.db") as store:
        add(store, store.create_session(root, "offline"), "user", "zebra here")
        add(store, store.create_session(other, "offline"), "user", "zebra there")
        assert len(store.search("zebra", root)) == 1
        assert len(store.search("zebra", None)) == 2


def test_index_follows_deletes_and_rewinds(tmp_path: Path, root: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        a = store.create_session(root, "offline")
        add(store, a, "user", "ocelot")
        assert store.search("ocelot", root)
        session_admin.delete(store, [a])
        assert store.search("ocelot", root) == []
        with store._tx() as db:  # the index's own consistency check
            db.execute("INSERT INTO message_search (message_search) VALUES ('integrity-check')")


def test_an_older_database_is_indexed_on_open(tmp_path: Path, root: Path) -> None:
    path = tmp_path / "s.db"
    with Store.open(path) as store:
        a = store.create_session(root, "offline")
        add(store, a, "user", "platypus before search existed")
    db = sqlite3.connect(path)  # make it a database from before search
    for name in ("message_search_add", "message_search_del", "message_search_upd"):
        db.execute(f"DROP TRIGGER {name}")
    db.execute("DROP TABLE message_search")
    db.execute("DROP VIEW message_text")
    db.commit()
    db.close()
    with Store.open(path) as store:
        hits = store.search("platypus", root)
        assert [h.session_id for h in hits] == [a]
        add(store, a, "user", "platypus again")
        assert len(store.search("platypus", root)) == 2


def test_only_redacted_text_is_indexed(tmp_path: Path, root: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-searchsecret0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    with Store.open(tmp_path / "s.db") as store:
        a = store.create_session(root, "offline")
        add(store, a, "user", f"my key is {secret} please")
        hits = store.search("key", root)
        assert hits and secret not in hits[0].snippet
        assert store.search(secret, root) == []


@pytest.mark.parametrize("words", HOSTILE)
def test_no_query_raises_anything_but_one_line(tmp_path: Path, root: Path, words: str) -> None:
    with Store.open(tmp_path / "s.db") as store:
        add(store, store.create_session(root, "offline"), "user", 'say "hi NEAR foo -x a+b')
        try:
            store.search(words, root)
        except SearchError as e:
            assert "\n" not in str(e)


def test_query_syntax_is_literal() -> None:
    assert fts_query('NEAR(a "b') == '"NEAR(a" """b"'
    assert fts_query("foo* -bar") == '"foo"* "-bar"'
    with pytest.raises(SearchError):
        fts_query(' - * " ')


def test_hostile_content_big_escape_and_marks(tmp_path: Path, root: Path) -> None:
    big = ("filler " * 300_000) + "needle at the end"  # ~2 MB
    with Store.open(tmp_path / "s.db") as store:
        a = store.create_session(root, "offline")
        add(store, a, "tool", big)
        add(store, a, "user", "needle \x1b[2J\x1b]0;owned\x07 [bold]x[/] \ue000fake\ue001")
        hits = store.search("needle", root)
    assert len(hits) == 2
    fake = next(h for h in hits if h.seq == 2)
    assert ("fake", True) not in fake.pieces  # our marks cannot be forged by content


def test_cli_text_json_and_hostile(tmp_path: Path, root: Path) -> None:
    with Store.open() as store:
        a = store.create_session(root, "offline")
        add(store, a, "user", "wombat \x1b]52;c;aGk=\x07 in the garden")
    res = kep("sessions", "search", "wombat", "--project", str(root))
    assert res.returncode == 0, res.stderr
    assert a in res.stdout and "[wombat]" in res.stdout and "\x1b" not in res.stdout
    res = kep("sessions", "search", "wombat", "--json", "--project", str(root))
    data = json.loads(res.stdout)
    assert data[0]["session"] == a and data[0]["highlights"] == ["wombat"]
    for words in ['"', "NEAR(", "*", "-"]:
        res = kep("sessions", "search", words, "--project", str(root))
        assert "Traceback" not in res.stderr
        assert len(res.stderr.strip().splitlines()) <= 1
    res = kep("sessions", "search", "nomatchword", "--project", str(root))
    assert res.returncode == 0 and "no message" in res.stdout


def test_a_project_hit_below_many_better_ones_elsewhere_is_found(tmp_path: Path,
                                                                  root: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    with Store.open(tmp_path / "s.db") as store:
        busy = store.create_session(other, "offline")
        for _ in range(60):
            add(store, busy, "user", "otter otter otter")
        mine = store.create_session(root, "offline")
        add(store, mine, "user", "a lone otter among many other words in a long message")
        assert [h.session_id for h in store.search("otter", root, limit=1)] == [mine]
        assert [h.session_id for h in store.search("otter", root, limit=2)] == [mine]
        assert len(store.search("otter", None, limit=100)) == 61
