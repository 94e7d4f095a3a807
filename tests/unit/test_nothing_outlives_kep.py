"""Nothing outlives kep: whatever ends `kep call`, `kep run` or the TUI (SIGKILL included, or a
closed terminal), no tool process, child or `setsid` grandchild of it is alive 2 s later.

The tool below starts a child, a `setsid` grandchild that holds the tool's stdout, and a
double-forked `setsid` daemon; each runs `sleep` with a unique duration, the marker the
process table is searched for (by argv, so the check does not depend on how kep finds them).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import KEP, kep_env, write_tool

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def marker() -> str:
    return f"{300 + random.randrange(1, 10**6) / 10**7:.7f}"


DEFINITION = '[{"name": "spawner", "description": "d", "parameters": {"type": "object"}}]'


def spawner(root: Path, mark: str) -> None:
    write_tool(root / "prompts" / "functions" / "spawner", f"""#!/bin/sh
if [ "$1" = "--list-functions" ]; then
  echo '{DEFINITION}'
  exit 0
fi
sleep {mark} &
setsid sleep {mark} &
setsid sh -c 'sleep {mark} & exit 0' </dev/null >/dev/null 2>&1 &
echo started
sleep 0.3
touch "{root}/ready"
sleep {mark}
""")
    (root / "kep.toml").write_text(
        '[tools]\nbuiltins = false\n\n[[approval.rules]]\ntool = "spawner"\naction = "allow"\n')


def marked(mark: str) -> list[int]:
    """Live processes whose argv holds `mark` (zombies are gone already)."""
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
            state = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if mark.encode() in argv and state != "Z":
            pids.append(int(entry.name))
    return pids


def wait_for(path: Path, proc: subprocess.Popen[bytes], within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not path.exists():
        assert time.monotonic() < deadline and proc.poll() is None, f"{path} never appeared"
        time.sleep(0.02)


def all_started(mark: str) -> None:
    """The tool's last sleep, its child, the setsid grandchild and the daemon all run."""
    deadline = time.monotonic() + 10
    while len(marked(mark)) < 4:
        assert time.monotonic() < deadline, marked(mark)
        time.sleep(0.02)


def assert_all_gone(mark: str, within: float = 2.0) -> None:
    time.sleep(within)
    left = marked(mark)
    for pid in left:  # never leave them behind for the next test
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"{len(left)} processes outlived kep"


@pytest.fixture
def proj(project: Path) -> tuple[Path, str]:
    mark = marker()
    spawner(project, mark)
    return project, mark


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("how", ["call", "run"])
def test_killing_headless_kep_leaves_nothing(proj: tuple[Path, str], how: str, sig: int) -> None:
    root, mark = proj
    argv = ["call", "spawner", "{}"] if how == "call" else ["run", "--yes", "/call spawner {}"]
    proc = subprocess.Popen([*KEP, *argv], cwd=root, env=kep_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_for(root / "ready", proc)
        all_started(mark)
        proc.send_signal(sig)
        proc.wait(10)
        if sig != signal.SIGKILL:
            assert proc.returncode == -sig
            assert b"Traceback" not in proc.stderr.read()  # type: ignore[union-attr]
        assert_all_gone(mark)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM", "SIGHUP", "close the terminal"])
def test_ending_the_tui_leaves_nothing(proj: tuple[Path, str], how: str) -> None:
    import pexpect

    root, mark = proj
    child = pexpect.spawn(KEP[0], [*KEP[1:]], cwd=str(root), dimensions=(30, 100),
                          env=kep_env(TERM="xterm-256color"))
    try:
        child.expect("offline", timeout=30)
        time.sleep(0.5)
        child.send("/call spawner {}\r")
        deadline = time.monotonic() + 30
        while not (root / "ready").exists():
            assert time.monotonic() < deadline and child.isalive(), "the tool never started"
            try:
                child.read_nonblocking(1 << 16, timeout=0.05)
            except pexpect.TIMEOUT:
                pass
        all_started(mark)
        if how == "close the terminal":
            child.close(force=False)  # the pty goes away: the kernel hangs the session up
        else:
            os.kill(child.pid, getattr(signal, how))
        deadline = time.monotonic() + 10
        while child.isalive() and time.monotonic() < deadline:
            try:
                child.read_nonblocking(1 << 16, timeout=0.05)
            except (pexpect.TIMEOUT, pexpect.EOF):
                pass
        assert not child.isalive()
        assert_all_gone(mark)
    finally:
        if child.isalive():
            child.terminate(force=True)


def test_a_setsid_daemon_is_gone_after_a_clean_exit_too(proj: tuple[Path, str]) -> None:
    root, mark = proj
    write_tool(root / "prompts" / "functions" / "spawner", f"""#!/bin/sh
if [ "$1" = "--list-functions" ]; then
  echo '{DEFINITION}'
  exit 0
fi
setsid sh -c 'sleep {mark} & exit 0' </dev/null >/dev/null 2>&1 &
echo done
""")
    res = subprocess.run([*KEP, "call", "spawner", "{}"], cwd=root, env=kep_env(),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert_all_gone(mark)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGKILL", "close the terminal"])
def test_the_tuis_mcp_server_does_not_outlive_it(project: Path, how: str) -> None:
    import pexpect

    mark = marker()
    server = Path(__file__).resolve().parent.parent / "fakes" / "mcp_server.py"
    run = f"import runpy, sys; sys.argv = [{str(server)!r}]; runpy.run_path(sys.argv[0], " \
          "run_name='__main__')"
    (project / "kep.toml").write_text(
        f'[tools]\nbuiltins = false\n\n[mcp.servers.fake]\ncommand = {sys.executable!r}\n'
        f'args = ["-c", {run!r}, "{mark}"]\n')
    child = pexpect.spawn(KEP[0], [*KEP[1:]], cwd=str(project), dimensions=(30, 100),
                          env=kep_env(TERM="xterm-256color"))
    try:
        deadline = time.monotonic() + 30
        while not marked(mark):
            assert time.monotonic() < deadline and child.isalive(), "no MCP server started"
            try:
                child.read_nonblocking(1 << 16, timeout=0.05)
            except (pexpect.TIMEOUT, pexpect.EOF):
                pass
        if how == "close the terminal":
            child.close(force=False)
        else:
            os.kill(child.pid, signal.SIGKILL)
        assert_all_gone(mark)
    finally:
        if child.isalive():
            child.terminate(force=True)
