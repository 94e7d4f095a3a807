"""Headless approval (issue 25 item 11): `kep run` still denies asks without a TTY unless
--yes; --mode applies (read-only denies even with --yes; yolo runs unasked); the JSON events
name the deciding rule's file and line; session hooks fire around the run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import KEP, kep_env, write_tool
from test_run_offline import SHOUT


def run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KEP, "run", "--project", str(project), "--model", "offline",
                           *args], capture_output=True, text=True, env=kep_env(), timeout=60)


def decided(out: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    events = [json.loads(line) for line in out.stdout.splitlines()]
    return [e for e in events if e["type"] == "ToolCallDecided"]


def shout_project(project: Path) -> None:
    write_tool(project / "prompts/functions/shout", SHOUT)
    (project / "notes.txt").write_text("hello")


def test_read_only_mode_denies_even_with_yes(project: Path) -> None:
    shout_project(project)
    out = run(project, "--yes", "--json", "--mode", "read-only", "shout notes.txt")
    (event,) = decided(out)
    assert event["decision"] == "deny" and "read-only mode" in event["rule"]
    assert not (project / "ran.marker").exists()


@pytest.mark.slow
def test_yolo_runs_without_a_tty_and_without_yes(project: Path) -> None:
    shout_project(project)
    out = run(project, "--json", "--mode", "yolo", "shout notes.txt")
    (event,) = decided(out)
    assert event["decision"] == "allow" and "yolo" in event["rule"]
    assert (project / "ran.marker").exists()


def test_ask_mode_still_denies_without_a_tty(project: Path) -> None:
    shout_project(project)
    out = run(project, "--json", "--mode", "ask", "shout notes.txt")
    (event,) = decided(out)
    assert event["decision"] == "ask" and event["approved"] is False
    assert not (project / "ran.marker").exists()


def test_events_carry_the_rule_file_and_line(project: Path) -> None:
    shout_project(project)
    (project / "kep.toml").write_text('\n[[approval.rules]]\ntool = "shout"\naction = "deny"\n')
    out = run(project, "--yes", "--json", "shout notes.txt")
    (event,) = decided(out)
    assert event["decision"] == "deny"
    assert event["rule_file"] == str((project / "kep.toml").resolve()) and event["rule_line"] == 2


def test_session_hooks_fire_around_a_run(project: Path) -> None:
    shout_project(project)
    log = project / "hooks.log"
    (project / "kep.toml").write_text(
        '[[hooks]]\nevent = "session_start"\ncommand = "cat >> hooks.log; echo >> hooks.log"\n'
        '[[hooks]]\nevent = "session_end"\ncommand = "cat >> hooks.log; echo >> hooks.log"\n'
        '[[hooks]]\nevent = "before_tool"\nmatcher = "shout"\n'
        'command = "echo \'{\\"decision\\": \\"deny\\", \\"message\\": \\"not today\\"}\'"\n')
    out = run(project, "--yes", "--json", "shout notes.txt")
    (event,) = decided(out)
    assert event["decision"] == "deny" and "not today" in event["rule"]
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert [e["event"] for e in lines] == ["session_start", "session_end"]
