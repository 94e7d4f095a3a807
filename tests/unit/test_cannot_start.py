"""A child or a thread that cannot be started is a failed call, never `ok` and never a crash.

A fork bomb (held by a process limit) leaves kep unable to start a thread. asyncio (3.11)
watches each child with one, so the tool's own start fails after the fork: the call is
failed with the reason, and the child that did start is killed, not left unwatched.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from tools_testutil import make_config

from tuiapp import cli
from tuiapp.tools.runner import Runner
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


async def test_a_tool_whose_watcher_thread_cannot_start_is_a_failed_call(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KEP_OWNER", "test-owner")
    pidfile = project / "pid"
    tool = project / "prompts" / "functions" / "stay"
    tool.write_text(f"#!/bin/sh\necho $$ > {pidfile}\nexec sleep 60\n")
    tool.chmod(0o755)
    spec = ToolSpec("stay", "stay", {"type": "object"}, "keprompt", str(tool),
                    run={"exe": str(tool)})
    runner = Runner(make_config(project), spool_dir=project / "spool")

    def no_thread(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", no_thread)
    fin = await runner.execute(spec, ToolCall("c1", "stay", {}), lambda e: None)
    monkeypatch.undo()
    assert fin.status == "failed", (fin.status, fin.result)
    assert "too many processes" in fin.result
    for _ in range(50):  # the child started before the failure: it must not be left running
        if pidfile.exists() and pidfile.read_text().strip():
            break
        time.sleep(0.05)
    if pidfile.exists() and pidfile.read_text().strip():
        assert not _alive(int(pidfile.read_text())), "the unwatched child is still running"


def test_a_thread_that_cannot_start_anywhere_is_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tuiapp.commands import sessions

    def boom(args: object) -> int:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(sessions, "main", boom)
    code = cli.main(["sessions"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "too many processes" in err, err


def test_the_session_database_failing_is_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import sqlite3

    from tuiapp.commands import sessions

    def boom(args: object) -> int:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(sessions, "main", boom)
    code = cli.main(["sessions"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "disk is full" in err, err


def test_other_errors_are_not_swallowed(monkeypatch: pytest.MonkeyPatch) -> None:
    from tuiapp.commands import sessions

    def boom(args: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr(sessions, "main", boom)
    with pytest.raises(RuntimeError, match="a bug"):
        cli.main(["sessions"])
    assert os.getpid()
