"""Resident call starters: one process per set of walls, already inside them, that starts each
call in namespaces of its own (_child_starter.py). A fresh bwrap per call cost ~10 ms of CPU (new
user and network namespaces, a dozen mounts); a call a starter makes costs about 2 ms more wall
time and 3 ms more CPU than a plain exec (tests/bench/sandbox_overhead.py).

A set of walls gets its starter at its third use (a tool called once or twice pays for none),
and the calls that find it still starting get a bwrap of their own meanwhile; a listing of many
tools gets one first, and its calls wait for it. Listers go to a starter of their own in listing
mode (_child_listing_starter.py): a thread and a posix_spawn each, where a call costs a fork.
Everything here may decline: start_call() returning None means "start this call with its own
bwrap", which is always right.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import errno
import functools
import marshal
import os
import signal
import socket
import subprocess
import sys
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tuiapp.security.sandbox import seccomp_filter
from tuiapp.security.sandbox.base import Wrapped
from tuiapp.security.sandbox.starter_transport import (
    STDERR,
    STDOUT,
    CallTransport,
    PipeProtocol,
    pidfds_tell_pids,
)

# The starter's program: its calls mode, then its listing mode and main().
SOURCES = [Path(__file__).with_name(name)
           for name in ("_child_starter.py", "_child_listing_starter.py")]
# spawn.py's: starts the starter behind these walls in this mode, the socket as its fd 0
Launch = Callable[[list[str], socket.socket, str], Any]
MAX_STARTERS = 4  # idle ones beyond this are ended, least recently used first
START_AT_USE = 3  # (its start costs ~50 ms of CPU, ~6 bwrap starts: not for one call)
READY_TIMEOUT = 10.0


class Starter:
    """One starter process and its socket."""

    def __init__(self, loop: asyncio.AbstractEventLoop, walls: list[str], launch: Launch,
                 mode: str, awaited: bool = False) -> None:
        self.loop = loop
        self.born = loop.time()
        # Calls wait for it while it starts (a listing of many tools), or go their own way.
        self.awaited = awaited
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = launch(walls, theirs, mode)
        finally:
            theirs.close()
        self.sock.setblocking(False)
        self.ready: asyncio.Future[bool] = loop.create_future()
        self.waiting: dict[int, asyncio.Future[None]] = {}
        self.calls: dict[int, CallTransport] = {}
        self.next_id = 0
        self.sending = asyncio.Lock()
        self.alive = True
        loop.add_reader(self.sock, self._readable)

    def _readable(self) -> None:
        while self.alive:
            try:
                msg, anc, _, _ = self.sock.recvmsg(1 << 16, socket.CMSG_SPACE(4))
            except BlockingIOError:
                return
            except OSError:
                msg, anc = b"", []
            fds = array.array("i")
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds.frombytes(data[:len(data) - len(data) % 4])
            if not msg:
                self.close()
                return
            self._dispatch(msg.split(b"\0"), list(fds))

    def _dispatch(self, said: list[bytes], fds: list[int]) -> None:
        """One message of _child_starter.py's protocol."""
        what = said[0]
        if what in (b"ready", b"refused"):  # (refused: bwrap per call; the why is its own)
            if not self.ready.done():
                self.ready.set_result(what == b"ready")
            return
        call_id = int(said[1])
        call = self.calls.get(call_id)
        waiting = self.waiting.pop(call_id, None)
        if what == b"started" and call is not None and fds:
            call.started(fds.pop(0))
            if waiting is not None and not waiting.done():
                waiting.set_result(None)
        elif what == b"failed" and waiting is not None and not waiting.done():
            self.calls.pop(call_id, None)
            waiting.set_exception(OSError(int(said[2]), os.strerror(int(said[2]))))
        elif what == b"status" and call is not None:
            del self.calls[call_id]
            call.ended(int(said[2]))
        for fd in fds:
            os.close(fd)

    async def run(self, factory: Callable[[], asyncio.SubprocessProtocol], argv: Sequence[str],
                  env: Mapping[str, str], cwd: str | None, stdin_pipe: bool
                  ) -> tuple[CallTransport, asyncio.SubprocessProtocol] | None:
        """Start one call (None: it could not be handed over; start it with its own bwrap)."""
        self.next_id += 1
        call_id = self.next_id
        fields = [b"%d" % call_id, os.fsencode(cwd or ""), b"%d" % len(argv),
                  *map(os.fsencode, argv),
                  *(os.fsencode(k) + b"=" + os.fsencode(v) for k, v in env.items())]
        if any(b"\0" in f for f in fields):  # exec refuses those: as bwrap's start says
            return None
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        theirs, ours = [out_w, err_w], [out_r, err_r]
        if stdin_pipe:
            in_r, in_w = os.pipe()
            theirs.append(in_r)
            ours.append(in_w)
        try:
            await self._send(b"\0".join(fields), theirs)
        except OSError:  # too big for one message, or the starter gone: bwrap does it
            for fd in ours:
                os.close(fd)
            return None
        finally:
            for fd in theirs:
                os.close(fd)
        protocol = factory()
        call = self.calls[call_id] = CallTransport(self.loop, protocol)
        started = self.waiting[call_id] = self.loop.create_future()
        try:
            await started
        except BaseException:
            for fd in ours:
                os.close(fd)
            if call.pidfd >= 0 or not started.done():
                call.close()
            raise
        if call.pid == 0:  # (never with the check above; -1: it has ended already)
            call.close()
            for fd in ours:
                os.close(fd)
            raise OSError(errno.ESRCH, "the sandbox's call starter lost the call it started")
        protocol.connection_made(call)
        for fd, pipe_fd in ((STDOUT, out_r), (STDERR, err_r)):
            call.open_pipes.add(fd)
            pipe, _ = await self.loop.connect_read_pipe(
                lambda fd=fd: PipeProtocol(call, fd), os.fdopen(pipe_fd, "rb", buffering=0))  # type: ignore[misc]
            call.pipes[fd] = pipe
        if stdin_pipe:
            pipe, _ = await self.loop.connect_write_pipe(
                asyncio.Protocol, os.fdopen(ours[2], "wb", buffering=0))
            call.pipes[0] = pipe
        call.connected_all()
        return call, protocol

    async def _send(self, message: bytes, fds: list[int]) -> None:
        """One message with its descriptors; while the socket is full (a burst of calls), wait
        until the starter has read some. One sender at a time: the waits are in turn."""
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
        async with self.sending:
            while True:
                try:
                    self.sock.sendmsg([message], anc)
                    return
                except BlockingIOError:
                    await self._writable()

    async def _writable(self) -> None:
        room = self.loop.create_future()
        self.loop.add_writer(self.sock, room.set_result, None)
        try:
            await asyncio.wait_for(room, READY_TIMEOUT)
        except TimeoutError:
            raise OSError(errno.EAGAIN, "the sandbox's call starter is not reading") from None
        finally:
            self.loop.remove_writer(self.sock)

    def idle(self) -> bool:
        return not self.calls and not self.waiting

    def close(self) -> None:
        """End the starter (EOF on its socket), and so every call it started."""
        if not self.alive:
            return
        self.alive = False
        self.loop.remove_reader(self.sock)
        self.sock.close()
        with contextlib.suppress(OSError):
            self.proc.kill()
        if not self.ready.done():
            self.ready.set_result(False)
        gone = OSError(errno.ECHILD, "the sandbox's call starter ended")
        for fut in self.waiting.values():
            if not fut.done():
                fut.set_exception(gone)
        self.waiting.clear()
        for call in self.calls.values():
            call.ended(signal.SIGKILL)  # its namespace went with the starter's
        self.calls.clear()


class Pool:
    """The starters of one event loop, by the walls they hold."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.starters: OrderedDict[Any, Starter] = OrderedDict()
        self.uses: dict[Any, int] = {}
        self.refused: set[Any] = set()  # walls whose starter could not start: bwrap per call
        self.handed = 0  # calls a starter started (the benchmark says how many)
        self.wait_for_start = False  # (tests: every call through the starter, from the first)

    async def start_call(self, loop: asyncio.AbstractEventLoop, w: Wrapped,
                         factory: Callable[[], asyncio.SubprocessProtocol],
                         cwd: Path | str | None, stdin: object, launch: Launch,
                         listing: bool = False
                         ) -> tuple[CallTransport, asyncio.SubprocessProtocol] | None:
        """Start the call `w` with its walls' starter; None: start it with its own bwrap.
        A lister (`listing`) goes to a starter in listing mode (_child_listing_starter.py)."""
        res = w.resident
        if (res is None or w.env is None or stdin not in (subprocess.PIPE, subprocess.DEVNULL)
                or not pidfds_tell_pids()):
            return None
        self._same_loop(loop)
        mode = "listing" if listing else "calls"
        key = (res.key, mode)
        if key in self.refused:
            return None
        starter = self.starters.get(key)
        if starter is None or not starter.alive:
            uses = self.uses[key] = self.uses.get(key, 0) + 1
            if uses < START_AT_USE or not self._room():
                return None
            starter = self.starters[key] = Starter(loop, res.walls, launch, mode)
        self.starters.move_to_end(key)
        if (not starter.ready.done() and not (starter.awaited or self.wait_for_start)
                and loop.time() < starter.born + READY_TIMEOUT):
            return None  # it comes up meanwhile: this call gets a bwrap of its own
        try:
            ok = await asyncio.wait_for(asyncio.shield(starter.ready), READY_TIMEOUT)
        except TimeoutError:
            ok = False
        if not ok:  # the walls for calls cannot be made this way here: bwrap per call
            starter.close()
            self.starters.pop(key, None)
            self.refused.add(key)
            return None
        started = await starter.run(factory, res.argv, w.env,
                                    str(cwd) if cwd is not None else None,
                                    stdin == subprocess.PIPE)
        self.handed += started is not None
        return started

    def warm(self, loop: asyncio.AbstractEventLoop, w: Wrapped, launch: Launch) -> None:
        """Start the listing starter for these walls now, without a call: many listers are
        coming."""
        self._same_loop(loop)
        res = w.resident
        key = (res.key, "listing") if res is not None else None
        if (res is not None and key not in self.refused and key not in self.starters
                and self._room()):
            self.starters[key] = Starter(loop, res.walls, launch, "listing", awaited=True)

    def _same_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        if loop is not self.loop:  # (a test's, `kep sandbox`'s: the old one's are gone)
            self.close()
            self.loop = loop

    def _room(self) -> bool:
        if len(self.starters) < MAX_STARTERS:
            return True
        for key, starter in self.starters.items():  # least recently used first
            if starter.idle():
                starter.close()
                del self.starters[key]
                return True
        return False

    def close(self) -> None:
        for starter in self.starters.values():
            starter.close()
        self.starters.clear()
        self.uses.clear()
        self.refused.clear()


pool = Pool()


# The starter's interpreter runs its program from the next argument: compiled (marshal), when
# it is kep's own interpreter (compiling the source cost each start ~8 ms of CPU), else source.
BOOT = ("import sys\nkind, _, code = sys.argv.pop(1).partition(':')\n"
        "if kind == 'marshal':\n    import marshal\n    exec(marshal.loads(bytes.fromhex(code)))\n"
        "else:\n    exec(compile(code, 'kep-call-starter', 'exec'))\n")


@functools.cache
def _program(compiled: bool) -> str:
    source = "\n".join(path.read_text(encoding="utf-8") for path in SOURCES)
    if compiled:
        code = marshal.dumps(compile(source, "kep-call-starter", "exec", optimize=2)).hex()
        if len(code) < 120_000:  # (exec takes at most 128 KB in one argument: ~76 KB now)
            return "marshal:" + code
    return "source:" + source


def command(walls: list[str], python: str, mode: str) -> list[str]:
    """The starter behind `walls`: stdlib only, in an interpreter the walls show (-I: nothing
    of the project on its path; -S: no site), with the user's own ids to give calls back and
    the seccomp filter, or None where kep has no filter for this machine."""
    ids = ["-", "-"] if os.getuid() == 0 else [str(os.getuid()), str(os.getgid())]
    filt = seccomp_filter.program()
    program = _program(os.path.realpath(python) == os.path.realpath(sys.executable))
    return [*walls, "--", python, "-I", "-S", "-c", BOOT, program, *ids,
            filt.hex() if filt is not None else "", mode]


def own_env() -> dict[str, str]:
    """The starter's own environment: nothing but the mark that lets kep's watchdog find it
    (each call brings its own; the variable is tools/lifetime.py's)."""
    owner = os.environ.get("KEP_OWNER")
    return {"KEP_OWNER": owner} if owner else {}
