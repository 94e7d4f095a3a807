"""`kep run` end to end on the offline model: real CLI, real registry, real runner."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import KEP, kep_env, write_tool

SCHEMA = ('[{"name":"shout","description":"Upper-case a file","parameters":{"type":"object",'
          '"properties":{"filename":{"type":"string"}},"required":["filename"]}}]')
SHOUT = f"""#!/bin/sh
case "$1" in
  --list-functions) echo '{SCHEMA}';;
  shout) touch ran.marker; python3 -c 'import json,sys; f=json.load(sys.stdin)["filename"]
print(open(f).read().upper())';;
esac
"""

def run(project: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KEP, "run", "--project", str(project), *args], capture_output=True,
                          text=True, env=kep_env(), input=stdin, timeout=60)


def test_offline_readfile_prints_first_line(project: Path) -> None:
    (project / "README.md").write_text("First line of the readme\nsecond\n")
    out = run(project, "--model", "offline", "--yes", "readfile README.md")
    assert out.returncode == 0, out.stderr
    assert "First line of the readme" in out.stdout
    assert "readfile" in out.stderr  # the tool activity goes to stderr


@pytest.mark.slow
def test_ask_is_denied_without_tty_unless_yes(project: Path) -> None:
    write_tool(project / "prompts/functions/shout", SHOUT)
    (project / "notes.txt").write_text("hello")
    out = run(project, "--model", "offline", "shout notes.txt")
    # Not a success, and nobody is said to have denied it: no one was there to ask.
    assert out.returncode == 1
    assert "was not run" in out.stdout and not (project / "ran.marker").exists()
    assert "not run: no one is there to approve it (no TTY)" in out.stderr
    assert "the user denied" not in out.stdout + out.stderr
    out = run(project, "--model", "offline", "--yes", "shout notes.txt")
    assert "HELLO" in out.stdout and (project / "ran.marker").exists()


def test_json_events_and_prompt_from_stdin(project: Path) -> None:
    (project / "a.txt").write_text("alpha\n")
    out = run(project, "--model", "offline", "--yes", "--json", stdin="readfile a.txt")
    assert out.returncode == 0, out.stderr
    kinds = [json.loads(line)["type"] for line in out.stdout.splitlines()]
    for kind in ("TurnStarted", "ToolCallRequested", "ToolCallDecided", "ToolCallStarted",
                 "ToolFinished", "TextDelta", "TurnEnded"):
        assert kind in kinds
    finished = next(json.loads(x) for x in out.stdout.splitlines() if '"ToolFinished"' in x)
    assert finished["status"] == "ok" and finished["exit_code"] == 0


@pytest.mark.slow
def test_usage_errors_exit_2(project: Path) -> None:
    out = run(project, "--model", "nope/x", "hi")
    assert out.returncode == 2 and "unknown provider 'nope'" in out.stderr
    out = run(project, "--model", "openai/gpt-5-mini", "hi")
    assert out.returncode == 2 and "OPENAI_API_KEY is not set" in out.stderr
    out = run(project, "--model", "offline", "   ")
    assert out.returncode == 2 and "empty" in out.stderr
    assert "Traceback" not in out.stderr


def test_failing_tool_exits_1_and_the_model_still_answers(project: Path) -> None:
    out = run(project, "--model", "offline", "--yes", "readfile missing.txt")
    assert out.returncode == 1
    assert "**readfile** failed" in out.stdout


@pytest.mark.slow
def test_offline_makes_several_calls_in_one_reply(project: Path) -> None:
    (project / "a.txt").write_text("alpha line\n")
    (project / "b.txt").write_text("beta line\n")
    out = run(project, "--model", "offline", "--yes", "--json", "readfile a.txt; readfile b.txt")
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    replies = [e["message"] for e in events if e["type"] == "MessageAdded"
               and e["message"]["role"] == "assistant"]
    # One reply carries both calls; the next one summarises both results.
    assert [len(r.get("tool_calls") or []) for r in replies] == [2, 0]
    finished = [e for e in events if e["type"] == "ToolFinished"]
    assert [f["status"] for f in finished] == ["ok", "ok"]
    text = "".join(e["text"] for e in events if e["type"] == "TextDelta")
    assert "2 calls: 2 finished ok" in text and text.index("alpha") < text.index("beta")
    plain = run(project, "--model", "offline", "--yes", "readfile a.txt; readfile b.txt")
    assert plain.returncode == 0 and "alpha line" in plain.stdout and "beta line" in plain.stdout
