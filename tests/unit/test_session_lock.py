"""One live writer per session: a second kep on a session another live kep is writing is
refused with one line, or continues in a copy with --fork; it never interleaves. A session
left by a dead kep is taken over cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import KEP, kep_env, write_tool

from tuiapp.conversation import session_lock
from tuiapp.conversation.recorder import SessionRecorder
from tuiapp.conversation.session_lock import SessionBusy, acquire, fork_session
from tuiapp.conversation.store import Store
from tuiapp.vocab.events import MessageAdded, TextDelta
from tuiapp.vocab.messages import Message

SLOW = """#!/bin/sh
if [ "$1" = "--list-functions" ]; then
  echo '[{"name": "slow", "description": "d", "parameters": {"type": "object"}}]'
  exit 0
fi
touch "$LLM_ROOT_DIR/started"
sleep 3
echo "slow done"
"""

HOLD = """
import sys, time
from tuiapp.conversation.store import Store
from tuiapp.conversation.session_lock import acquire
store = Store.open(sys.argv[1])
acquire(store, sys.argv[2])
print("held", flush=True)
time.sleep(60)
"""


def kep(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KEP, *argv], cwd=cwd, env=kep_env(), capture_output=True,
                          text=True, timeout=60)


@pytest.fixture
def proj(project: Path) -> Path:
    write_tool(project / "prompts" / "functions" / "slow", SLOW)
    (project / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    return project


def holder(db: Path, sid: str) -> subprocess.Popen[str]:
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(db), sid], stdout=subprocess.PIPE,
                         text=True, env=kep_env())
    assert p.stdout is not None and p.stdout.readline().strip() == "held"
    return p


def test_a_live_holder_refuses_a_second_writer_naming_its_pid(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s.db")
    sid = store.create_session(tmp_path, "offline")
    p = holder(store.path, sid)
    try:
        with pytest.raises(SessionBusy) as e:
            SessionRecorder(store, sid)
        assert str(e.value) == (f"session {sid} is open in another kep (pid {p.pid}); "
                                "--fork to continue in a copy")
    finally:
        p.kill()
        p.wait()


def test_a_session_left_by_a_dead_kep_is_taken_over(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s.db")
    sid = store.create_session(tmp_path, "offline")
    p = holder(store.path, sid)
    p.send_signal(signal.SIGKILL)
    p.wait()
    SessionRecorder(store, sid)  # no error: the kernel dropped the dead holder's lock
    assert session_lock.lock_file(store, sid).read_text().strip() == str(os.getpid())
    session_lock.release(store, sid)


def test_the_lock_is_not_inherited_by_tools(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s.db")
    sid = store.create_session(tmp_path, "offline")
    acquire(store, sid)
    child = subprocess.Popen(["sleep", "30"])  # like a tool that outlives the call
    try:
        session_lock.release(store, sid)
        p = holder(store.path, sid)  # would block if the child held the descriptor
        p.kill()
        p.wait()
    finally:
        child.kill()
        child.wait()


def test_fork_copies_messages_and_calls_and_leaves_the_original(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s.db")
    sid = store.create_session(tmp_path, "offline")
    store.record(sid, MessageAdded(Message("user", "first question")))
    store.record(sid, TextDelta("a reply still stream"))
    before = store.load_messages(sid, for_resume=False)
    new = fork_session(store, sid)
    assert new != sid
    assert store.load_messages(sid, for_resume=False) == before  # untouched, draft included
    copy = store.load_messages(new, for_resume=False)
    assert [m.content for m in copy] == ["first question", "a reply still stream"]
    assert copy[-1].interrupted
    assert store.session_info(new).title.endswith("(fork)")


def _live_first(proj: Path) -> subprocess.Popen[str]:
    assert kep("run", "hello", cwd=proj).returncode == 0
    first = subprocess.Popen([*KEP, "run", "--continue", "--yes", "/call slow {}"], cwd=proj,
                             env=kep_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    deadline = time.monotonic() + 30
    while not (proj / "started").exists():
        assert time.monotonic() < deadline and first.poll() is None, "the first kep never ran"
        time.sleep(0.02)
    return first


def _session_ids(proj: Path) -> list[str]:
    store = Store.open()
    try:
        return [s.id for s in store.list_sessions(proj)]
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["run", "--continue", "x"], ["--continue"]])
def test_a_second_kep_on_a_live_session_is_refused_and_writes_nothing(
        proj: Path, argv: list[str]) -> None:
    first = _live_first(proj)
    try:
        (sid,) = _session_ids(proj)
        res = kep(*argv, cwd=proj)
        assert res.returncode == 2
        assert res.stderr == (f"kep: session {sid} is open in another kep (pid {first.pid}); "
                              "--fork to continue in a copy\n")
        _, err = first.communicate(timeout=30)
        assert first.returncode == 0, err
    finally:
        if first.poll() is None:
            first.kill()
    store = Store.open()
    history = store.load_messages(sid, for_resume=False)
    calls = store.tool_calls(sid)
    store.close()
    tool_results = [m.content for m in history if m.role == "tool"]
    assert tool_results == ["slow done"]  # no false "kep stopped" result, no second one
    assert not any(m.interrupted for m in history)
    assert [c.status for c in calls] == ["ok"]


@pytest.mark.slow
def test_fork_continues_a_live_session_in_a_copy(proj: Path) -> None:
    first = _live_first(proj)
    try:
        (sid,) = _session_ids(proj)
        res = kep("run", "--continue", "--fork", "second thoughts", cwd=proj)
        assert res.returncode == 0, res.stderr
        first.communicate(timeout=30)
        assert first.returncode == 0
    finally:
        if first.poll() is None:
            first.kill()
    ids = _session_ids(proj)
    assert len(ids) == 2 and sid in ids
    (copy,) = [i for i in ids if i != sid]
    store = Store.open()
    original = [m.content for m in store.load_messages(sid, for_resume=False)]
    forked = [m.content for m in store.load_messages(copy, for_resume=False)]
    store.close()
    assert "second thoughts" in forked and "second thoughts" not in original
    assert forked[0] == "hello" and original[0] == "hello"
    assert "slow done" in original


def test_fork_needs_continue_or_session(proj: Path) -> None:
    res = kep("run", "--fork", "x", cwd=proj)
    assert res.returncode == 2 and "--fork goes with --continue or --session" in res.stderr


@pytest.mark.slow
def test_a_session_whose_kep_was_killed_is_continued_cleanly(proj: Path) -> None:
    first = _live_first(proj)
    first.send_signal(signal.SIGKILL)
    first.wait()
    res = kep("run", "--continue", "again", cwd=proj)
    assert res.returncode == 0, res.stderr


@pytest.mark.slow
def test_a_lock_file_naming_a_live_unrelated_pid_is_taken_over(proj: Path) -> None:
    """A lock file left by a dead kep whose pid now belongs to another process (pid 1 here):
    only the flock counts, so the session is continued, and the file names the new writer."""
    assert kep("run", "first", cwd=proj).returncode == 0
    store = Store.open()
    sid = store.list_sessions(proj)[0].id
    session_lock.lock_file(store, sid).write_text("1\n")
    res = kep("run", "--continue", "second", cwd=proj)
    assert res.returncode == 0, res.stderr
    assert [m.content for m in store.load_messages(sid) if m.role == "user"] == ["first",
                                                                                "second"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink"])
def test_a_lock_file_that_is_not_a_file_is_one_line(proj: Path, kind: str) -> None:
    assert kep("run", "first", cwd=proj).returncode == 0
    store = Store.open()
    lock = session_lock.lock_file(store, store.list_sessions(proj)[0].id)
    lock.unlink()
    {"fifo": os.mkfifo, "directory": os.mkdir,
     "symlink": lambda p: os.symlink("/etc/passwd", p)}[kind](lock)
    res = kep("run", "--continue", "second", cwd=proj)
    assert res.returncode != 0 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.count("\n") == 1 and "cannot lock the session" in res.stderr


@pytest.mark.slow
def test_a_session_open_in_a_live_kep_is_not_deleted_or_pruned(proj: Path) -> None:
    """Deleting a session under its live writer would leave that kep writing into nothing:
    `sessions delete` refuses it (exit 1, naming the pid) and `prune` skips it."""
    assert kep("run", "first", cwd=proj).returncode == 0
    store = Store.open()
    sid = store.list_sessions(proj)[0].id
    p = holder(store.path, sid)
    try:
        res = kep("sessions", "delete", sid, cwd=proj)
        assert res.returncode == 1 and f"pid {p.pid}" in res.stderr and "not deleted" in res.stderr
        # The dry run says what the real prune will do: skip it, not list it as doomed.
        res = kep("sessions", "prune", "--older-than", "0m", "--dry-run", cwd=proj)
        assert res.returncode == 0 and "would not be deleted" in res.stderr, res.stderr
        assert f"pid {p.pid}" in res.stderr and "would delete" not in res.stdout
        res = kep("sessions", "prune", "--older-than", "0m", cwd=proj)
        assert res.returncode == 0 and "not deleted" in res.stderr, res.stderr
        assert [s.id for s in store.list_sessions(proj)] == [sid]
    finally:
        p.kill()
        p.wait()
    res = kep("sessions", "delete", sid, cwd=proj)  # its kep is gone: now it goes
    assert res.returncode == 0 and store.list_sessions(proj) == []
