"""The session search benchmark's corpus: SESSIONS sessions × MESSAGES messages that look like
kep's (a script's helper, not collected by pytest).

Each session alternates user question, assistant call, tool result, assistant answer. Words
are drawn Zipf-like (s=1) from a 50,000-word vocabulary whose head is real English and
programming words ("the" is in 89% of messages, "error" in 33%); a fifth of the assistant
answers hold a code block, tool results are log lines and file listings, and one tool result
in 100 is long (1,600-12,800 words, up to ~77 KB). Planted for the queries: "kingfisher" in
27 messages of the million, and the phrase "connection refused by peer" in ~1,700.

The database is built with kep's own code: Store.open makes the schema; the messages go in
with executemany in one transaction with the index's triggers and table set aside, and then
store_schema.ensure_search (what kep runs when it opens a database from before search)
makes the index, its view and triggers and indexes everything in one `rebuild`. `check`
compares the result with a store kep makes fresh, object by object, so the two can't drift.

Built once per (GENERATOR, size, kep's schema) and kept in the temp dir (`--fresh` rebuilds,
`--remove` deletes it after the run); a build that was cut short is never reused (it is
written under another name and renamed when complete).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import random
import sqlite3
import string
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tuiapp.conversation import store_schema
from tuiapp.conversation.store import Store
from tuiapp.conversation.store_recording import message_json
from tuiapp.vocab.messages import Message, ToolCall

GENERATOR = 1  # bump when the corpus changes: the cached file is keyed by it
SEED = 7
PROJECTS = ("/bench/one", "/bench/two")
RARE, PHRASE = "kingfisher", "connection refused by peer"
_HEAD = ("the to of and a in is it you that for this on with be as are not can file if or "
        "have from your an by error function will use at line but all should return value "
        "code test we run when do config path so one which import new data self type need "
        "set list call output name first there then check like string python make build "
        "tool more error's only also any default user add read write class update change "
        "server request response module version install json key open log debug fix")
HEAD = _HEAD.split()


def vocabulary(size: int = 50_000) -> list[str]:
    """HEAD, then made-up words of 2–4 syllables (distinct, deterministic)."""
    rnd = random.Random(SEED)
    onsets = ["", *"bcdfghjklmnprstvwz", "br", "cl", "st", "tr", "sh", "ch", "gr", "pl"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ou", "ea"]
    words, seen = list(HEAD), set(HEAD) | {RARE, *PHRASE.split()}
    while len(words) < size:
        word = "".join(rnd.choice(onsets) + rnd.choice(vowels) + rnd.choice(["", "", "n", "r", "s"])
                       for _ in range(rnd.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


class Writer:
    """Message texts drawn from one long Zipf stream (a window per message: cheap, and every
    message differs)."""

    def __init__(self, rnd: random.Random) -> None:
        self.rnd = rnd
        self.vocab = vocabulary()
        weights = list(itertools.accumulate(1 / r for r in range(1, len(self.vocab) + 1)))
        self.stream = rnd.choices(self.vocab, cum_weights=weights, k=3_000_000)

    def words(self, n: int) -> str:
        start = self.rnd.randrange(len(self.stream) - n)
        words = self.stream[start:start + n]
        for i in range(11, n, self.rnd.randint(9, 16)):  # sentences, for the snippets' sake
            words[i] += "."
        return " ".join(words)

    def ident(self) -> str:
        return "_".join(self.stream[self.rnd.randrange(len(self.stream))]
                        for _ in range(self.rnd.randint(1, 3)))

    def code(self) -> str:
        f, a, b = self.ident(), self.ident(), self.ident()
        return (f"```python\ndef {f}({a}, {b}=None):\n    if {b} is None:\n"
                f"        {b} = {a}.{self.ident()}()\n"
                f"    return [{self.ident()}(x) for x in {b}]\n```")

    def tool_output(self) -> str:
        rnd = self.rnd
        if rnd.random() < 0.01:  # a long one: a build log, a big file
            return "\n".join(self.words(rnd.randint(8, 16)) for _ in range(rnd.randint(200, 800)))
        if rnd.random() < 0.3:
            return "\n".join(f"{self.ident()}/{self.ident()}.py  {rnd.randint(10, 99999)} bytes"
                             for _ in range(rnd.randint(3, 40)))
        lines = [f"2026-11-{rnd.randint(1, 28):02d} {rnd.randint(0, 23):02d}:"
                 f"{rnd.randint(0, 59):02d} {rnd.choice(('INFO', 'WARN', 'ERROR'))} "
                 + self.words(rnd.randint(6, 14)) for _ in range(rnd.randint(2, 20))]
        if rnd.random() < 0.01:
            lines.insert(rnd.randrange(len(lines)), f"ERROR {PHRASE} while {self.words(4)}")
        return "\n".join(lines)

    def messages(self, sid: str, count: int) -> Iterator[Message]:
        rnd = self.rnd
        for m in range(1, count + 1):
            kind = m % 4
            if kind == 1:
                text = self.words(int(rnd.lognormvariate(3.0, 0.7)) + 3)
                if rnd.random() < 0.0001:
                    text += f" {RARE}"
                yield Message("user", text)
            elif kind == 2:
                call = ToolCall(f"c{sid}{m}", rnd.choice(("readfile", "execcmd", "grep")),
                                {"path": self.ident() + ".py"})
                yield Message("assistant", self.words(rnd.randint(5, 30)), tool_calls=(call,))
            elif kind == 3:
                yield Message("tool", self.tool_output(), tool_call_id=f"c{sid}{m - 1}")
            else:
                text = self.words(int(rnd.lognormvariate(4.5, 0.6)) + 10)
                if rnd.random() < 0.2:
                    text += "\n\n" + self.code() + "\n\n" + self.words(rnd.randint(10, 40))
                yield Message("assistant", text)


def cache_key(sessions: int, messages: int) -> str:
    schema = (GENERATOR, SEED, sessions, messages, store_schema.SCHEMA_VERSION,
              store_schema.SCHEMA, store_schema.SEARCH_VIEW, store_schema.SEARCH_TABLE,
              store_schema.SEARCH_TRIGGERS)
    return hashlib.sha256(repr(schema).encode()).hexdigest()[:12]


def cached_path(sessions: int, messages: int) -> Path:
    base = Path(os.environ.get("TMPDIR") or tempfile.gettempdir())
    return base / f"kep-search-bench-{cache_key(sessions, messages)}" / "sessions.db"


def build(path: Path, sessions: int, messages: int) -> None:
    """Write the corpus to `path` (a new file)."""
    Store.open(path).close()  # kep's schema, index and triggers
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA synchronous=OFF")
    db.execute("PRAGMA cache_size=-262144")  # 256 MB
    # Set the index aside (kep's ensure_search makes it again below): one trigger per row
    # would index a million messages one at a time.
    for name in ("message_search_add", "message_search_del", "message_search_upd"):
        db.execute(f"DROP TRIGGER {name}")
    db.execute("DROP TABLE message_search")
    db.execute("DROP VIEW message_text")
    writer = Writer(random.Random(SEED))
    now = time.time() - sessions * 60.0
    db.execute("BEGIN")
    for s in range(sessions):
        sid = f"{s:08x}"
        t = now + s * 60.0
        db.execute("INSERT INTO sessions (id, project_root, model, title, created, updated) "
                   "VALUES (?, ?, 'bench', ?, ?, ?)",
                   (sid, PROJECTS[s % 2], writer.words(writer.rnd.randint(2, 6)), t, t + 59))
        db.executemany("INSERT INTO messages (session_id, seq, data, created) VALUES "
                       "(?, ?, ?, ?)", ((sid, m, message_json(msg), t + m * 0.5)
                                        for m, msg in enumerate(writer.messages(sid, messages),
                                                                start=1)))
    store_schema.ensure_search(db)  # the index, its view and triggers; indexes every row
    db.execute("COMMIT")
    db.close()


def schema_of(path: Path) -> list[tuple[str, str, str]]:
    db = sqlite3.connect(path)
    try:
        return sorted(db.execute("SELECT type, name, coalesce(sql, '') FROM sqlite_master"))
    finally:
        db.close()


def check(path: Path) -> None:
    """The benchmark's database has the schema and index kep makes, object by object."""
    with tempfile.TemporaryDirectory() as tmp:
        Store.open(Path(tmp) / "fresh.db").close()
        fresh = schema_of(Path(tmp) / "fresh.db")
    mine = schema_of(path)
    if mine != fresh:
        raise SystemExit(f"the benchmark's schema differs from kep's:\n{set(mine) ^ set(fresh)}")


def ensure(sessions: int, messages: int, fresh: bool = False) -> tuple[Path, str]:
    """The corpus's path and how it came to be ("built in N s" or "reused ...")."""
    path = cached_path(sessions, messages)
    stamp = path.with_name("built")  # the file's mtime moves whenever kep opens it
    if path.exists() and not fresh:
        check(path)
        built = stamp.read_text() if stamp.exists() else "at an unknown time"
        return path, f"reused {path} (built {built})"
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name("building-" + "".join(random.choices(string.ascii_lowercase, k=6)))
    t = time.perf_counter()
    try:
        build(part, sessions, messages)
        check(part)
        for stale in (path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            stale.unlink(missing_ok=True)  # an old file's journal must not meet the new one
        part.replace(path)
        stamp.write_text(f"{time.ctime()} in {time.perf_counter() - t:.0f} s")
    finally:
        for leftover in (part, part.with_name(part.name + "-wal"),
                         part.with_name(part.name + "-shm")):
            leftover.unlink(missing_ok=True)
    return path, f"built {path} in {time.perf_counter() - t:.0f} s"
