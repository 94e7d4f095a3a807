"""Honest persistence: a reply that cannot be stored is reported, never claimed saved, and a full
disk is one clear line, never a traceback.

A full disk is made with RLIMIT_FSIZE: a write past the limit fails with EFBIG, which SQLite
reports as "database or disk is full", as on a real full disk (Python ignores SIGXFSZ).
"""

from __future__ import annotations

import resource
import subprocess
from pathlib import Path

import pytest
from conftest import KEP, kep_env
from fakes.llm_server import FakeLLMServer

from tuiapp.settings import paths


def _project(root: Path, url: str) -> Path:
    (root / "kep.toml").write_text(
        "[tools]\nbuiltins = false\n"
        f'[providers.fake]\napi = "chat"\nbase_url = "{url}"\napi_key_env = "FAKE_LLM_KEY"\n')
    return root


def run(root: Path, *argv: str, fsize: int | None = None) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.run([*KEP, "run", "--project", str(root), "--model", "fake/m", *argv],
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env=kep_env(FAKE_LLM_KEY="sk-fake"),
                          preexec_fn=limit)


def one_line(res: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    lines = [x for x in res.stderr.splitlines() if x.startswith("kep:")]
    assert lines, res.stderr[-2000:]
    for n in needles:
        assert any(n in x for x in lines), lines
    return "\n".join(lines)


def _db_size() -> int:
    db = paths.data_dir() / "sessions.db"
    return sum(p.stat().st_size for p in db.parent.glob("sessions.db*"))


@pytest.mark.slow
def test_a_reply_the_store_cannot_keep_is_reported_not_claimed_saved(project: Path) -> None:
    with FakeLLMServer([{"text": "warm"}, {"lorem": 60_000, "words_per_delta": 500}]) as server:
        root = _project(project, server.base_url)
        assert run(root, "hi").returncode == 0  # the database exists, with one small session
        res = run(root, "hi again", fsize=max(_db_size(), 64 * 1024) + 64 * 1024)
    assert len(res.stdout) > 300_000  # the reply was shown …
    assert res.returncode != 0, res.stderr[-2000:]  # … but the run does not claim success
    one_line(res, "shown but not saved")


@pytest.mark.slow
def test_a_full_disk_at_start_is_one_line(project: Path) -> None:
    with FakeLLMServer([{"text": "warm"}, {"text": "never"}], then={"text": "x"}) as server:
        root = _project(project, server.base_url)
        assert run(root, "hi").returncode == 0
        # Checkpointed into the main file, nothing in the WAL: any new page has no room.
        import sqlite3

        db = paths.data_dir() / "sessions.db"
        with sqlite3.connect(db) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        res = run(root, "hi again", fsize=8192)  # the WAL gets one page, no more
    assert res.returncode != 0
    one_line(res, "session database", "disk")


@pytest.mark.slow
@pytest.mark.parametrize("argv", [("--continue", "more"), ("hi",)])
def test_a_read_only_store_is_one_line(project: Path, argv: tuple[str, ...]) -> None:
    with FakeLLMServer([{"text": "warm"}], then={"text": "x"}) as server:
        root = _project(project, server.base_url)
        assert run(root, "hi").returncode == 0
        res = run(root, *argv, fsize=0)  # nothing can be written at all
    assert res.returncode != 0
    one_line(res)
