"""A call that a resident starter made (starters.py), as asyncio shows a child process to
tools/proc.py: its pipes, its end, and how to end it (it is the pid 1 of its own namespace,
known to kep by a pidfd, not as a child of kep's)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import Any

STDOUT, STDERR = 1, 2


class PipeProtocol(asyncio.Protocol):
    def __init__(self, call: CallTransport, fd: int) -> None:
        self.call, self.fd = call, fd

    def data_received(self, data: bytes) -> None:
        self.call.protocol.pipe_data_received(self.fd, data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.call.pipe_lost(self.fd, exc)


class CallTransport(asyncio.SubprocessTransport):
    """One call started by a starter, as asyncio's subprocess transport shows a child."""

    def __init__(self, loop: asyncio.AbstractEventLoop,
                 protocol: asyncio.SubprocessProtocol) -> None:
        super().__init__()
        self.loop, self.protocol = loop, protocol
        self.pipes: dict[int, asyncio.BaseTransport] = {}
        self.open_pipes: set[int] = set()
        self.pid = 0
        self.pidfd = -1
        self.returncode: int | None = None
        self.status: int | None = None  # its wait status, once it ended
        self.connected = False
        self.killed_by: int | None = None
        self.closed = False

    def get_pid(self) -> int:
        return self.pid  # (-1: ended already; tools/proc.py signals through signal_group)

    def get_returncode(self) -> int | None:
        return self.returncode

    def get_pipe_transport(self, fd: int) -> Any:
        return self.pipes.get(fd)

    def is_closing(self) -> bool:
        return self.closed

    def send_signal(self, signal_number: int) -> None:
        self.signal_group(signal_number)

    def terminate(self) -> None:
        self.signal_group(signal.SIGTERM)

    def kill(self) -> None:
        self.signal_group(signal.SIGKILL)

    def signal_group(self, sig: int) -> None:
        """End the call. It is its PID namespace's pid 1, which ignores what it has no handler
        for: it gets SIGKILL, and the kernel kills everything in its namespace, as when kep
        ended a call's bwrap monitor before (SIGTERM and SIGKILL alike)."""
        if self.status is not None or self.pidfd < 0:
            return
        if self.killed_by is None:
            self.killed_by = sig
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for pipe in self.pipes.values():
            pipe.close()
        if self.status is None:
            self.signal_group(signal.SIGKILL)
        self._close_pidfd()

    def _close_pidfd(self) -> None:
        if self.pidfd >= 0 and self.status is not None:
            os.close(self.pidfd)
            self.pidfd = -1

    # ---- from the starter and the pipes ----------------------------------------------------

    def started(self, pidfd: int) -> None:
        self.pidfd = pidfd
        self.pid = _pid_of(pidfd)
        if self.closed:  # given up while it was being started: it ends now
            self.signal_group(signal.SIGKILL)

    def ended(self, status: int) -> None:
        self.status = status
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            # as bwrap said: 128 + the signal, or killed as kep asked (its monitor was)
            self.returncode = -self.killed_by if self.killed_by else 128 + sig
        else:
            self.returncode = os.waitstatus_to_exitcode(status)
        if self.closed:
            self._close_pidfd()
        if self.connected:
            self._tell_exit()

    def connected_all(self) -> None:
        self.connected = True
        if self.status is not None:
            self._tell_exit()

    def _tell_exit(self) -> None:
        self.protocol.process_exited()
        self._maybe_lost()

    def pipe_lost(self, fd: int, exc: Exception | None) -> None:
        self.open_pipes.discard(fd)
        self.protocol.pipe_connection_lost(fd, exc)
        self._maybe_lost()

    def _maybe_lost(self) -> None:
        if self.status is not None and not self.open_pipes and self.connected:
            self.connected = False  # once
            self.protocol.connection_lost(None)


def _pid_of(pidfd: int) -> int:
    """The call's pid as kep sees it (the starter's is another namespace's); -1 once it has
    ended and been reaped (a quick call, before kep read this), 0 where the kernel cannot say."""
    try:
        with open(f"/proc/self/fdinfo/{pidfd}", "rb") as f:
            for line in f:
                if line.startswith(b"Pid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def pidfds_tell_pids() -> bool:
    """Does this kernel say a pidfd's pid (5.4+)? Without it kep could not signal a call."""
    global _PIDFD_PIDS
    if _PIDFD_PIDS is None:
        try:
            fd = os.pidfd_open(os.getpid())
        except (AttributeError, OSError):
            _PIDFD_PIDS = False
        else:
            _PIDFD_PIDS = _pid_of(fd) == os.getpid()
            os.close(fd)
    return _PIDFD_PIDS


_PIDFD_PIDS: bool | None = None
