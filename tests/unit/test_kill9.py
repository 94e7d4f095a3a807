"""End to end: `kep run` killed with SIGKILL mid-reply keeps everything committed before the kill;
`kep sessions show` prints it and `kep run --continue` resumes from it."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import KEP, kep_env
from fakes.llm_server import FakeLLMServer

PARTS = [f"part{i} " for i in range(60)]


def write_project(project: Path, base_url: str) -> None:
    (project / "kep.toml").write_text(
        'model = "fake/m"\n'
        "[providers.fake]\n"
        f'api = "chat"\nbase_url = "{base_url}"\napi_key_env = "FAKE_LLM_KEY"\n'
        "[tools]\nbuiltins = false\n")


def read_until(proc: subprocess.Popen[bytes], needle: bytes, timeout: float = 30) -> bytes:
    """Read the child's stdout as it streams until `needle` shows up."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        left = deadline - time.monotonic()
        assert left > 0 and proc.poll() is None, f"no {needle!r} in the reply: {seen!r}"
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if ready:
            seen += os.read(fd, 4096)
    return seen


def kep(project: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KEP, *argv], cwd=project, env=kep_env(FAKE_LLM_KEY="sk-fake"),
                          capture_output=True, text=True, timeout=60)


@pytest.mark.slow
def test_kill9_mid_reply_keeps_what_was_streamed(project: Path) -> None:
    slow_story = {"text": PARTS, "delay": 0.05}  # 3 s of streaming: the kill lands mid-way
    with FakeLLMServer([slow_story, {"text": "Resumed."}]) as server:
        write_project(project, server.base_url)
        proc = subprocess.Popen([*KEP, "run", "tell me a story"], cwd=project,
                                env=kep_env(FAKE_LLM_KEY="sk-fake"), stdout=subprocess.PIPE)
        try:
            printed = read_until(proc, b"part8 ").decode()
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            assert proc.stdout is not None
            proc.stdout.close()
        assert proc.returncode == -signal.SIGKILL

        listing = kep(project, "sessions")
        assert listing.returncode == 0, listing.stderr
        [row] = [line for line in listing.stdout.splitlines()[1:] if line.strip()]
        sid = row.split()[0]
        assert "tell me a story" in row

        show = kep(project, "sessions", "show", sid)
        assert show.returncode == 0, show.stderr
        assert "[user]\ntell me a story\n" in show.stdout
        head, _, partial = show.stdout.partition("[assistant (interrupted)]\n")
        assert "[user]" in head
        # Whatever reached the terminal had been committed first; the reply was cut mid-way.
        assert partial.startswith(printed), (printed, partial)
        assert PARTS[-1] not in partial

        # Resuming sends the partial reply back as history and goes on recording.
        resumed = kep(project, "run", "--continue", "go on")
        assert resumed.returncode == 0, resumed.stderr
        assert resumed.stdout.strip() == "Resumed."
        messages = server.requests[-1].body["messages"]
        contents = [(m["role"], m.get("content")) for m in messages]
        assert ("user", "tell me a story") in contents and ("user", "go on") in contents
        [assistant] = [c for role, c in contents if role == "assistant"]
        assert assistant.startswith(printed.rstrip())

    show = kep(project, "sessions", "show", sid[:4])
    assert show.stdout.index("[assistant (interrupted)]") < show.stdout.index("[user]\ngo on")
    assert show.stdout.rstrip().endswith("[assistant]\nResumed.")
