"""Searching every session: 10,000 sessions × 100 messages (1,000,000 messages, ~20 words
each, words drawn Zipf-like from a 20,000-word vocabulary).

Prints the median time of Store.search (FTS5, bm25-ranked, top 20 with snippets) for a rare
word, a common one, two words and a prefix, in one project and across all, against a
baseline measured in the same run: a LIKE scan over the messages (what search without the
index would cost). Not an assertion; the issue's target is under 200 ms.
Run: .venv/bin/python tests/bench/session_search.py [SESSIONS] [MESSAGES]
"""

from __future__ import annotations

import itertools
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tuiapp.conversation.store import Store  # noqa: E402

SESSIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
MESSAGES = int(sys.argv[2]) if len(sys.argv) > 2 else 100
VOCAB = [f"w{i}x" for i in range(20_000)]
CUM = list(itertools.accumulate(1 / (i + 1) for i in range(len(VOCAB))))
PROJECTS = ("/bench/one", "/bench/two")
RUNS = 5


def build(path: Path) -> None:
    Store.open(path).close()  # the schema, the index and its triggers
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=OFF")
    rnd = random.Random(7)
    now = time.time()
    db.execute("BEGIN")
    for s in range(SESSIONS):
        sid = f"{s:08x}"
        db.execute("INSERT INTO sessions (id, project_root, model, title, created, updated) "
                   "VALUES (?, ?, 'bench', ?, ?, ?)", (sid, PROJECTS[s % 2], f"session {s}",
                                                        now, now))
        rows = []
        for m in range(1, MESSAGES + 1):
            words = rnd.choices(VOCAB, cum_weights=CUM, k=20)
            if rnd.random() < 0.0001:
                words.append("kingfisher")  # the rare word: ~100 messages in a million
            text = " ".join(words)
            role = "user" if m % 2 else "assistant"
            rows.append((sid, m, json.dumps({"role": role, "content": text}), now))
        db.executemany("INSERT INTO messages (session_id, seq, data, created) VALUES "
                       "(?, ?, ?, ?)", rows)
        if s % 500 == 499:
            db.execute("COMMIT")
            db.execute("BEGIN")
    db.execute("COMMIT")
    db.execute("INSERT INTO message_search (message_search) VALUES ('optimize')")
    db.close()


def median_ms(fn: object) -> float:
    times = []
    for _ in range(RUNS):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "search.db"
        t = time.perf_counter()
        build(path)
        print(f"built {SESSIONS:,} sessions × {MESSAGES} messages in "
              f"{time.perf_counter() - t:.1f} s ({path.stat().st_size / 1e6:.0f} MB)")
        store = Store.open(path)
        raw = sqlite3.connect(path)
        queries = {"rare word": "kingfisher", "common word": "w50x", "two words": "w3x w70x",
                   "prefix": "w123*"}
        for label, words in queries.items():
            for scope in (PROJECTS[0], None):
                hits = store.search(words, scope)
                ms = median_ms(lambda w=words, s=scope: store.search(w, s))
                print(f"search {label:<12} {'one project' if scope else 'all':<12} "
                      f"{ms:8.1f} ms  ({len(hits)} hits shown)")
        like = median_ms(lambda: raw.execute(
            "SELECT session_id, seq FROM messages WHERE data LIKE '%kingfisher%' "
            "ORDER BY created DESC LIMIT 20").fetchall())
        fts = median_ms(lambda: store.search("kingfisher", None))
        print(f"baseline LIKE scan (rare word, all) {like:8.1f} ms; FTS5 {fts:.1f} ms: "
              f"{like / fts:.0f}× faster")
        store.close()
        raw.close()


if __name__ == "__main__":
    main()
