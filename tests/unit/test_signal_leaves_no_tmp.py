"""A kep ended by a signal gives back what it holds outside itself: the network proxy's socket
folder in $TMPDIR (a `kep-net-*` folder each) is removed on SIGTERM and SIGHUP, as at a
normal exit (an end by signal skips atexit)."""

from __future__ import annotations

import signal
import subprocess
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


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signalled_kep_leaves_no_proxy_folder(tmp_path: Path, sig: signal.Signals) -> None:
    if spawn.mechanism().missing():
        pytest.skip("no sandbox here: kep starts no proxy without one")
    proj = tmp_path / "proj"
    write_tool(proj / "prompts" / "functions" / "nap", SLEEPER)
    (proj / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
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
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert list(tmp.glob("kep-net-*")) == [], "the proxy's folder was left in $TMPDIR"
