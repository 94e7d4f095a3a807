"""Sessions can be deleted, pruned by age (with --dry-run) and renamed, and `--continue`
reopens the session that was last open in the project."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from conftest import KEP, kep_env

from tuiapp.conversation import session_admin
from tuiapp.conversation.store import Store
from tuiapp.settings import paths
from tuiapp.vocab.events import MessageAdded
from tuiapp.vocab.messages import Message


def kep(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KEP, *argv], capture_output=True, text=True, env=kep_env(),
                          timeout=60)


def session(store: Store, root: Path, text: str, age_days: float = 0) -> str:
    sid = store.create_session(root, "offline")
    store.record(sid, MessageAdded(Message("user", text)))
    if age_days:
        then = time.time() - age_days * 86400
        with store._tx() as db:
            db.execute("UPDATE sessions SET updated=? WHERE id=?", (then, sid))
    return sid


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "p").mkdir()
    return (tmp_path / "p").resolve()


def test_delete_removes_the_session_its_records_and_its_spool(root: Path) -> None:
    with Store.open() as store:
        keep, gone = session(store, root, "keep me"), session(store, root, "delete me")
    spool = paths.data_dir() / "spool" / gone
    spool.mkdir(parents=True)
    (spool / "c1.log").write_text("output")
    res = kep("sessions", "delete", gone[:5], "--project", str(root))
    assert res.returncode == 0 and f"deleted {gone}" in res.stdout
    assert not spool.exists()
    with Store.open() as store:
        assert [s.id for s in store.list_sessions(root)] == [keep]
    res = kep("sessions", "delete", "zzzz", "--project", str(root))
    assert res.returncode == 2 and "no session 'zzzz'" in res.stderr
    assert "Traceback" not in res.stderr


def test_prune_by_age_with_a_dry_run_first(root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    with Store.open() as store:
        old = session(store, root, "old one", age_days=40)
        new = session(store, root, "new one", age_days=1)
        elsewhere = session(store, other, "another project", age_days=40)
    res = kep("sessions", "prune", "--older-than", "30d", "--dry-run", "--project", str(root))
    assert res.returncode == 0 and f"would delete {old}" in res.stdout
    assert new not in res.stdout and elsewhere not in res.stdout
    with Store.open() as store:
        assert len(store.list_sessions(None)) == 3  # a dry run deletes nothing
    res = kep("sessions", "prune", "--older-than", "30d", "--project", str(root))
    assert f"deleted {old}" in res.stdout
    with Store.open() as store:
        assert {s.id for s in store.list_sessions(None)} == {new, elsewhere}
    for bad in ("30", "thirty days", "30d\t; rm -rf /", "-1d"):
        res = kep("sessions", "prune", "--older-than", bad, "--project", str(root))
        assert res.returncode == 2 and "Traceback" not in res.stderr, bad
        assert "not an age" in res.stderr or "expected one argument" in res.stderr, bad


def test_rename_sets_a_one_line_title(root: Path) -> None:
    with Store.open() as store:
        sid = session(store, root, "first message")
    res = kep("sessions", "rename", sid, "Fix\tthe\nbuild", "\x1b]2;pwned\x07", "--project",
              str(root))
    assert res.returncode == 0
    with Store.open() as store:
        title = store.session_info(sid).title
    assert "\n" not in title and "\t" not in title and title.startswith("Fix the build")


def test_continue_reopens_the_session_last_open_not_the_newest(root: Path) -> None:
    with Store.open() as store:
        older = session(store, root, "older")
        newer = session(store, root, "newer")
        assert session_admin.continue_target(store, root) == newer  # nothing recorded yet
        session_admin.remember_open(root, older)
        assert session_admin.continue_target(store, root) == older
        session_admin.delete(store, [older])
        assert session_admin.continue_target(store, root) == newer  # a deleted one is skipped
    res = subprocess.run([*KEP, "run", "--model", "offline", "--continue", "hello", "--project",
                          str(root)], capture_output=True, text=True, env=kep_env(), timeout=60)
    assert res.returncode == 0, res.stderr
    with Store.open() as store:
        assert store.load_messages(newer)[-2].content == "hello"
