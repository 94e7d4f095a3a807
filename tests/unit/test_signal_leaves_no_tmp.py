"""A kep ended by a signal gives back what it holds outside itself: the network proxy's socket
folder in $TMPDIR (a `kep-net-*` folder each) is removed on SIGTERM and SIGHUP, as at a
normal exit (an end by signal skips atexit), and after a SIGKILL by kep's watchdog."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import KEP, kep_env, write_tool

from tuiapp.security.sandbox import spawn

SLEEPER = r'''#!/bin/sh
if [ "$1" = "--list-functions" ]; then
  echo '[{"name": "nap", "description": "Sleep", "parameters": {"type": "object"}}]'
  exit 0
fi
echo napping
exec sleep 30
'''


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_a_signalled_kep_leaves_no_proxy_folder(tmp_path: Path, sig: signal.Signals) -> None:
    if spawn.mechanism().missing():
        pytest.skip("no sandbox here: kep starts no proxy without one")
    proj = tmp_path / "proj"
    write_tool(proj / "prompts" / "functions" / "nap", SLEEPER)
    (proj / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    # (short: a Unix socket's path holds 107 bytes; a deeper $TMPDIR makes kep use /tmp)
    tmp = Path(tempfile.mkdtemp(prefix="kt-", dir="/tmp"))
    proc = subprocess.Popen([*KEP, "call", "nap", "{}", "--project", str(proj)],
                            env=kep_env(TMPDIR=str(tmp)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not list(tmp.glob("kep-net-*")):  # the proxy is up, the call running
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no proxy started"
            time.sleep(0.05)
        time.sleep(0.3)
        proc.send_signal(sig)
        proc.wait(15)
        deadline = time.monotonic() + 5  # after a SIGKILL, kep's watchdog removes it
        while (left := list(tmp.glob("kep-net-*"))) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    assert left == [], "the proxy's folder was left in $TMPDIR"


def test_a_deep_tmpdir_still_gets_a_proxy_socket(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    from tuiapp.security.sandbox import proxy

    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    assert proxy.socket_parent() == "/tmp"
    p = proxy.Proxy()
    try:
        assert len(os.fsencode(p.path)) <= proxy.SOCKET_PATH_MAX
    finally:
        p.remove_socket()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    if len(os.fsencode(str(tmp_path))) + 30 <= proxy.SOCKET_PATH_MAX:
        assert proxy.socket_parent() == str(tmp_path)  # $TMPDIR itself, when it fits


SLOW_WATCHDOG = r'''
import os, signal, sys, tempfile, time
from tuiapp.security.sandbox import temp_folders
from tuiapp.tools import lifetime
start = lifetime._start_reaper
def late(token):  # a loaded machine: the watchdog's thread runs late, its fork+exec is slow
    time.sleep(0.5)
    start(token)
lifetime._start_reaper = late
lifetime.arm()
folder = tempfile.mkdtemp(prefix="kep-net-", dir=sys.argv[1])
temp_folders.made(folder)  # made before the watchdog runs
while lifetime._reaper is None:
    time.sleep(0.01)
time.sleep(0.2)
os.kill(os.getpid(), signal.SIGKILL)
'''


def test_a_folder_made_while_the_watchdog_starts_is_removed_after_a_sigkill(
        tmp_path: Path) -> None:
    """The watchdog starts in a thread; a folder made before it runs is told to it once it
    does (before, it was dropped: one `kep-net-*` folder left now and then by a killed kep)."""
    res = subprocess.run([sys.executable, "-c", SLOW_WATCHDOG, str(tmp_path)], env=kep_env(),
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == -signal.SIGKILL, res.stderr
    deadline = time.monotonic() + 5
    while (left := list(tmp_path.glob("kep-net-*"))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == [], "the folder was left in $TMPDIR"


@pytest.mark.parametrize("failure", ["no thread", "no holder"])
async def test_a_proxy_that_fails_to_start_leaves_no_folder(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, failure: str) -> None:
    """However the network's start fails (no thread to wait in, under a fork bomb; a mechanism
    that cannot hold a namespace), its socket folder goes with it."""
    if spawn.mechanism().missing():
        pytest.skip("no sandbox here: kep starts no proxy without one")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    if failure == "no thread":
        async def no_thread(*args: object) -> None:
            raise RuntimeError("can't start new thread")

        monkeypatch.setattr(spawn.asyncio, "to_thread", no_thread)
    else:
        monkeypatch.setattr(spawn.mechanism(), "holder_argv", lambda *a: None)
    spawn.stop_network()
    monkeypatch.setattr(spawn._state, "net_failed", None)
    if failure == "no thread":  # this call fails; the next one tries again
        with pytest.raises(RuntimeError):
            await spawn._ensure_network()
        assert spawn._state.net_failed is None
    else:
        await spawn._ensure_network()
        assert spawn._state.net_failed
    assert spawn._state.proxy is None
    assert list(tmp_path.glob("kep-net-*")) == [], "the proxy's folder was left in $TMPDIR"
