"""A kep ended by a signal gives back what it holds outside itself: the network proxy's socket
folder in $TMPDIR (a `kep-net-*` folder each) is removed on SIGTERM and SIGHUP, as at a
normal exit (an end by signal skips atexit), and after a SIGKILL by kep's watchdog."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
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
