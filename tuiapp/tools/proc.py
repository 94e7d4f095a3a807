"""Subprocesses the way tools must run them.

Every child gets a new session (so no controlling terminal, and its own process group), stdin
closed or fed bytes then closed, and stdout/stderr read in chunks with flow control. Timeouts
and cancellation kill the whole group: SIGTERM, then SIGKILL after a short grace. Nothing here
ever reads "a line": a 5 MB line or invalid UTF-8 is just more bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import subprocess
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path

from tuiapp.security.sandbox import spawn
from tuiapp.security.sandbox.spawn import Kind
from tuiapp.tools.formats.base import ProcResult
from tuiapp.tools.shebang import read_shebang, spawn_error  # noqa: F401  (their old home)

GRACE = 0.5  # seconds between SIGTERM and SIGKILL
# After the leader exits, how long its pipes may stay open (held by a background child) before
# the rest of its group is killed, and then how long before kep stops waiting for EOF at all.
LINGER = 0.3
HIGH_WATER = 1 << 20  # pause reading the child's pipes above this many buffered bytes
LOW_WATER = 256 << 10
STDOUT, STDERR = 1, 2
STREAM_NAMES = {STDOUT: "stdout", STDERR: "stderr"}
LIST_STDOUT_CAP = 8 << 20  # --list-functions output kept by run_collect
STDERR_TAIL = 64 << 10
OWNER_VAR = "KEP_OWNER"  # see lifetime.py
# Process groups of the tools running now: what kep kills on SIGTERM/SIGHUP (lifetime.py).
LIVE_GROUPS: set[int] = set()


def kill_all_groups() -> None:
    """SIGKILL every live tool group (kep is ending on a signal)."""
    for pgid in list(LIVE_GROUPS):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


def _kill_unwatched(mark: bytes) -> None:
    """SIGKILL the group of kep's child whose KEP_OWNER carries `mark` (a start that failed
    after the exec), and reap it."""
    me = os.getpid()
    try:
        entries = [e.name for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return
    for name in entries:
        pid = int(name)
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            if ppid != me:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if not any(item.startswith(OWNER_VAR.encode() + b"=") and mark in item
                           for item in f.read().split(b"\0")):
                    continue
        except (OSError, ValueError, IndexError):
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def _signal_group(transport: asyncio.SubprocessTransport, sig: int) -> None:
    """Signal a child's whole group. A call the sandbox's resident starter made is the pid 1
    of its own namespace: its transport knows how to end all of it (sandbox/starters.py)."""
    own = getattr(transport, "signal_group", None)
    if own is not None:
        own(sig)
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(transport.get_pid(), sig)


class _Protocol(asyncio.SubprocessProtocol):
    """Queues (fd, bytes) chunks; pauses the pipes when the consumer falls behind."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.items: deque[tuple[int, bytes]] = deque()
        self.buffered = 0
        self.open = {STDOUT, STDERR}
        self.exited: asyncio.Future[None] = loop.create_future()
        self.waiter: asyncio.Future[None] | None = None
        self.transport: asyncio.SubprocessTransport | None = None
        self.paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def _pipes(self) -> list[asyncio.ReadTransport]:
        assert self.transport is not None
        pipes = (self.transport.get_pipe_transport(fd) for fd in (STDOUT, STDERR))
        return [p for p in pipes if p is not None and not p.is_closing()]  # type: ignore[misc]

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.items.append((fd, data))
        self.buffered += len(data)
        if self.buffered > HIGH_WATER and not self.paused:
            self.paused = True
            for p in self._pipes():
                p.pause_reading()
        self._wake()

    def consumed(self, n: int) -> None:
        self.buffered -= n
        if self.paused and self.buffered < LOW_WATER:
            self.paused = False
            for p in self._pipes():
                p.resume_reading()

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self.open.discard(fd)
        self._wake()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)
        self._wake()


class Proc:
    """A running child in its own session. Read with read() until None, then wait()."""

    def __init__(self, transport: asyncio.SubprocessTransport, protocol: _Protocol) -> None:
        self._transport = transport
        self._p = protocol
        self.pid: int = transport.get_pid()
        self._exit_seen_at: float | None = None
        self._group_killed = False
        self._gave_up = False

    @classmethod
    async def spawn(
        cls,
        argv: Sequence[str],
        *,
        cwd: Path | str | None,
        env: Mapping[str, str] | None,
        stdin: bytes | None = None,
        kind: Kind = "tool",
        tool: str | None = None,
        call_files: Sequence[Path] = (),
    ) -> Proc:
        """Start argv behind the sandbox's walls (security.sandbox.spawn). Raises OSError
        (ENOENT, EACCES, ENOEXEC …) when it cannot be started."""
        loop = asyncio.get_running_loop()
        owner = os.environ.get(OWNER_VAR)
        mark = f"start-{os.urandom(6).hex()}"  # finds this child if its start fails half-way
        if owner:  # the mark that lets kep's watchdog find it and its descendants (lifetime)
            env = {**(os.environ if env is None else env), OWNER_VAR: f"{owner} {mark}"}
        starting = asyncio.ensure_future(
            spawn.exec_protocol(
                loop,
                lambda: _Protocol(loop),
                argv,
                kind=kind,
                tool=tool,
                call_files=call_files,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=dict(env) if env is not None else None,
                start_new_session=True,  # setsid: own group, no controlling terminal
                close_fds=True,
            )
        )
        try:
            transport, protocol = await asyncio.shield(starting)
        except RuntimeError as e:
            # asyncio (3.11) watches each child with a thread; when none can be started (a
            # fork bomb used up the process limit) the child already runs, unwatched: kill it
            # and make this a failed start, never a crash or an "ok".
            _kill_unwatched(mark.encode())
            raise OSError(errno.EAGAIN, f"kep cannot watch it ({e}): too many processes or "
                                        "threads; a tool may be forking without limit") from None
        except asyncio.CancelledError:
            # The child may already run (and fork). Cancelling asyncio's own start would kill
            # only the leader and then wait for its pipes to close, i.e. for its children to
            # end: let the start finish, kill the whole group, then go on cancelling.
            try:
                transport, _ = await starting
            except Exception:
                raise asyncio.CancelledError from None
            _signal_group(transport, signal.SIGKILL)
            transport.close()
            raise
        if transport.get_pid() > 0:  # (a call the sandbox's starter saw end has none)
            LIVE_GROUPS.add(transport.get_pid())
        if stdin is not None:
            w = transport.get_pipe_transport(0)
            if w is not None:
                w.write(stdin)  # type: ignore[attr-defined]
                w.close()  # closes after flushing; a child that never reads just gets EPIPE
        return cls(transport, protocol)

    @property
    def returncode(self) -> int | None:
        return self._transport.get_returncode()

    @property
    def exited(self) -> bool:
        return self._p.exited.done()

    async def read(self) -> tuple[int, bytes] | None:
        """The next (fd, chunk), or None once stdout and stderr are both closed.

        Cancellation-safe: nothing is lost when a caller's wait_for/timeout interrupts it.
        If the leader has exited but a background child still holds the pipes, that child is
        an orphan in the making: after LINGER the group is killed, after another LINGER kep
        stops waiting (a child that left the group with setsid cannot be reached).
        """
        p = self._p
        while True:
            if p.items:
                fd, data = p.items.popleft()
                p.consumed(len(data))
                return fd, data
            if not p.open or self._gave_up:
                return None
            p.waiter = p.loop.create_future()
            if not p.exited.done():
                await asyncio.wait({p.waiter, p.exited}, return_when=asyncio.FIRST_COMPLETED)
                continue
            now = p.loop.time()
            if self._exit_seen_at is None:
                self._exit_seen_at = now
            stage_end = self._exit_seen_at + (2 * LINGER if self._group_killed else LINGER)
            try:
                await asyncio.wait_for(asyncio.shield(p.waiter), max(0.0, stage_end - now))
            except TimeoutError:
                if not self._group_killed:
                    self._group_killed = True
                    self.signal_group(signal.SIGKILL)
                else:
                    self._gave_up = True

    async def wait(self) -> int:
        """The leader's exit code (negative: killed by that signal)."""
        await asyncio.shield(self._p.exited)
        code = self._transport.get_returncode()
        assert code is not None
        return code

    def signal_group(self, sig: int) -> None:
        _signal_group(self._transport, sig)

    async def kill_group(self, grace: float = GRACE) -> None:
        """SIGTERM the group; SIGKILL whatever is left once the leader is gone or grace ends."""
        self.signal_group(signal.SIGTERM)
        try:
            await asyncio.wait_for(asyncio.shield(self._p.exited), grace)
        except TimeoutError:
            pass
        self.signal_group(signal.SIGKILL)

    def close(self) -> None:
        """Release the pipes. A child still running at this point is killed with its group."""
        if not self._p.exited.done():
            self.signal_group(signal.SIGKILL)
        LIVE_GROUPS.discard(self.pid)
        self._transport.close()


class TailBuffer:
    """The last `cap` bytes written, and how many were written in all."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.buf = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        self.buf += data
        if len(self.buf) > 2 * self.cap:  # trim rarely, keep appends cheap
            del self.buf[: len(self.buf) - self.cap]

    def value(self) -> bytes:
        return bytes(self.buf[-self.cap :]) if self.cap else b""


async def drain(proc: Proc, limit: float = 2 * LINGER + GRACE) -> list[tuple[int, bytes]]:
    """Whatever is still readable after a kill, waiting at most `limit` seconds."""
    got: list[tuple[int, bytes]] = []
    try:
        async with asyncio.timeout(limit):
            while (item := await proc.read()) is not None:
                got.append(item)
    except TimeoutError:
        pass
    return got


async def run_collect(
    argv: Sequence[str],
    *,
    timeout: float,
    cwd: Path | str | None,
    env: Mapping[str, str] | None,
    stdin: bytes | None = None,
    max_stdout: int = LIST_STDOUT_CAP,
) -> ProcResult:
    """Run argv to completion and collect its output (the formats' Lister).

    stdout is kept up to `max_stdout` bytes (ProcResult.stdout_truncated says so), stderr's
    last 64 KiB. On timeout the whole group is killed and exit_code is None. OSError from the
    spawn (not found, not executable, bad interpreter) propagates to the caller.
    """
    proc = await Proc.spawn(argv, cwd=cwd, env=env, stdin=stdin, kind="lister")
    out = bytearray()
    err = TailBuffer(STDERR_TAIL)
    truncated = False

    def take(fd: int, data: bytes) -> None:
        nonlocal truncated
        if fd == STDOUT:
            room = max_stdout - len(out)
            if len(data) > room:
                truncated = True
            out.extend(data[: max(room, 0)])
        else:
            err.add(data)

    try:
        try:
            async with asyncio.timeout(timeout):
                while (item := await proc.read()) is not None:
                    take(*item)
                code: int | None = await proc.wait()
        except TimeoutError:
            await proc.kill_group()
            for item in await drain(proc):
                take(*item)
            return ProcResult(
                None, bytes(out), err.value(), timed_out=True, stdout_truncated=truncated
            )
        return ProcResult(code, bytes(out), err.value(), stdout_truncated=truncated)
    finally:
        proc.close()
