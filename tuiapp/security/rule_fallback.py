"""Rule regexes RE2 can't run (backreferences, lookaround), in Python's engine with a deadline.

Python's `re` can't be stopped from another thread (a backtracking search holds the
interpreter), so these run in one helper process, `python -I`, that reads a request per line
and answers `1` or `0`. Past the deadline kep kills it (a new one starts on the next request)
and the answer is None: "could not decide", which the policy turns into asking.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import threading
import time

TIMEOUT = 0.5  # seconds for one rule against one call's texts

_WORKER = r"""
import json, re, sys
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    req = json.loads(line)
    rx = re.compile(req["p"])
    out.write(b"1\n" if any(rx.search(t) is not None for t in req["t"]) else b"0\n")
    out.flush()
"""


class _Worker:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        if self.proc is None or self.proc.poll() is not None:
            from tuiapp.security.sandbox import spawn  # a child like any other: walled

            self.proc = spawn.popen(
                [sys.executable, "-I", "-S", "-c", _WORKER], kind="helper",
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env={}, close_fds=True, start_new_session=True)
        return self.proc

    def kill(self) -> None:
        if self.proc is not None:
            try:
                self.proc.kill()
                self.proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass
            for f in (self.proc.stdin, self.proc.stdout):
                if f is not None:
                    f.close()
            self.proc = None

    def search_any(self, pattern: str, texts: list[str], timeout: float) -> bool | None:
        data = (json.dumps({"p": pattern, "t": texts}) + "\n").encode()
        with self.lock:
            proc = self._start()
            assert proc.stdin is not None and proc.stdout is not None
            deadline = time.monotonic() + timeout
            out_fd, in_fd = proc.stdin.fileno(), proc.stdout.fileno()
            os.set_blocking(out_fd, False)
            view, answer = memoryview(data), b""
            try:
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        self.kill()
                        return None
                    readable, writable, _ = select.select(
                        [in_fd], [out_fd] if view else [], [], left)
                    if writable:
                        view = view[os.write(out_fd, view[:1 << 16]):]
                    if readable:
                        chunk = os.read(in_fd, 16)
                        if not chunk:
                            self.kill()
                            return None
                        answer += chunk
                        if answer.endswith(b"\n"):
                            return answer.strip() == b"1"
            except OSError:
                self.kill()
                return None


_worker = _Worker()
atexit.register(_worker.kill)


def search_any(pattern: str, texts: list[str], timeout: float | None = None) -> bool | None:
    """Whether `pattern` is found in any of `texts`; None when not decided in time."""
    return _worker.search_any(pattern, texts, TIMEOUT if timeout is None else timeout)
