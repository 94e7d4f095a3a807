"""`kep call` to one of kep's file writers is checkpointed like a `kep run` call: a session of
its own holds the call and the file as it was, and `kep sessions undo ID` puts it back. Before,
a `kep call writefile` left nothing to undo."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from conftest import KEP, PYCACHE, kep_env

ENV = kep_env(PYTHONDONTWRITEBYTECODE="", PYTHONPYCACHEPREFIX=PYCACHE)


def kep(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KEP, *argv], capture_output=True, text=True, env=ENV, cwd=cwd,
                          timeout=90)


def _session_named(stderr: str) -> str:
    m = re.search(r"kept in session (\S+)", stderr)
    assert m, stderr
    return m.group(1)


def test_kep_call_writefile_and_editfile_can_be_undone(project: Path) -> None:
    notes = project / "notes.txt"
    notes.write_text("old line\n")
    put = kep("call", "writefile", json.dumps({"filename": "notes.txt",
                                              "content": "new line\n"}), cwd=project)
    assert put.returncode == 0, put.stderr
    assert notes.read_text() == "new line\n"
    sid = _session_named(put.stderr)
    made = kep("call", "writefile", json.dumps({"filename": "fresh.txt", "content": "x\n"}),
               cwd=project)
    assert made.returncode == 0, made.stderr
    fresh = _session_named(made.stderr)
    assert fresh != sid

    undone = kep("sessions", "undo", sid, cwd=project)
    assert undone.returncode == 0, undone.stderr
    assert notes.read_text() == "old line\n"
    assert "not restored" not in undone.stdout.split("(")[0]
    assert kep("sessions", "undo", fresh, cwd=project).returncode == 0
    assert not (project / "fresh.txt").exists()
    edited = kep("call", "editfile", json.dumps({"filename": "notes.txt", "edits": [
        {"search": "old", "replace": "edited"}]}), cwd=project)
    assert edited.returncode == 0, edited.stderr
    assert notes.read_text() == "edited line\n"
    assert kep("sessions", "undo", _session_named(edited.stderr), cwd=project).returncode == 0
    assert notes.read_text() == "old line\n"
    # a second undo of the same session has nothing left, and says so
    again = kep("sessions", "undo", sid, cwd=project)
    assert "nothing to undo" in again.stdout


def test_the_call_session_shows_the_call_and_its_result(project: Path) -> None:
    (project / "a.txt").write_text("one\n")
    res = kep("call", "writefile", json.dumps({"filename": "a.txt", "content": "two\n"}),
              cwd=project)
    sid = _session_named(res.stderr)
    shown = kep("sessions", "export", sid, "--format", "json", cwd=project)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "kep call writefile" in text and '"tool"' in text and "kep call" in text
    assert sid in kep("sessions", "list", cwd=project).stdout


def test_a_call_to_another_tool_records_no_session(project: Path) -> None:
    (project / "a.txt").write_text("one\n")
    res = kep("call", "readfile", json.dumps({"filename": "a.txt"}), cwd=project)
    assert res.returncode == 0, res.stderr
    assert "kept in session" not in res.stderr
    assert "kep call" not in kep("sessions", "list", cwd=project).stdout
