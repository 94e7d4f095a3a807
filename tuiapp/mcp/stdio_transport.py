"""kep's stdio transport for MCP servers: the SDK's stdio_client, with a line reader that a
server cannot use to freeze kep (see stdio_lines: linear line assembly, a 32 MB line cap,
big lines parsed off the event loop).

It yields the (read stream, write stream) pair the SDK's Client expects and keeps what kep
relies on from the SDK's transport: the server's environment (the SDK's safe defaults, the
given `env` over them, and kep's KEP_OWNER mark, see tuiapp/tools/lifetime.py) and cwd, stderr
to `errlog` (the server's log; through kep, which filters and caps it), a session and process
group of its own, and the shutdown the MCP spec describes: stdin closed, 2 s, SIGTERM to the
group, 2 s, SIGKILL, every wait bounded and shielded from the caller's cancellation
(startup.stopped_within_bounds kills the group itself if even that is not enough).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio
import anyio.to_thread
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.shared.message import SessionMessage

from tuiapp.mcp import stdio_lines
from tuiapp.mcp.stdio_lines import Dropped, LineSplitter
from tuiapp.security.sandbox import spawn
from tuiapp.tools.lifetime import OWNER_VAR

EXIT_WAIT = 2.0  # after stdin closes, then after SIGTERM, then after SIGKILL (as the SDK)
# Servers running now (name → pid of the process kep started), for kill_now.
RUNNING: dict[str, int] = {}
FLUSH_WAIT = 0.5  # for the writer to send what the session already handed it
READ_SIZE = 256 << 10
_POLL = 0.01
_PIPE_ERRORS = (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError)

Incoming = SessionMessage | Exception


class ErrLog(Protocol):
    """Where a server's stderr and kep's notes about it go (security.logfile.LogFile)."""

    def write(self, text: str) -> int: ...
    def write_bytes(self, data: bytes) -> None: ...
    def flush(self) -> None: ...


@asynccontextmanager
async def stdio_transport(params: StdioServerParameters, errlog: ErrLog,
                          server: str | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server and connect to it over its stdin/stdout (OSError if it cannot start)."""
    if os.name != "posix" or "\n".encode(params.encoding) != b"\n":
        # Windows needs the SDK's job objects; an encoding whose newline is not the byte 0x0A
        # (UTF-16/32) cannot be split as bytes. Neither is kep's case; the SDK serves both.
        # There its stderr cannot pass the secrets filter, so none of it is kept.
        async with stdio_client(params, errlog=subprocess.DEVNULL) as streams:  # type: ignore[arg-type]
            yield streams
        return
    env = get_default_environment() | (params.env or {})
    if owner := os.environ.get(OWNER_VAR):  # a server's own env cannot drop the mark
        env[OWNER_VAR] = owner
    # stderr comes through kep (a pipe), so the log gets it filtered and capped.
    process = await spawn.open_process([params.command, *params.args], env=env,
                                       stderr=subprocess.PIPE, cwd=params.cwd, server=server,
                                       start_new_session=True)
    if server is not None:
        RUNNING[server] = process.pid
    # No await from here until the task group is entered: a cancel in between would leak it.
    read_send, read_recv = anyio.create_memory_object_stream[Incoming](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()
    stderr_done = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_pump_stderr, process, errlog, stderr_done)
        tg.start_soon(_read, process, read_send, params, errlog)
        tg.start_soon(_write, process, write_recv, read_send, params, writer_done)
        try:
            yield read_recv, write_send
        finally:
            with anyio.CancelScope(shield=True):  # bounded: about 6 s at the very worst
                read_recv.close()  # the reader now drains, so a server stuck writing can exit
                write_send.close()
                with anyio.move_on_after(FLUSH_WAIT):
                    await writer_done.wait()
                await _stop(process, errlog)
                with anyio.move_on_after(FLUSH_WAIT):  # its last words (the exit status)
                    await stderr_done.wait()
                with contextlib.suppress(*_PIPE_ERRORS):
                    await process.stderr.aclose()  # type: ignore[union-attr]
                if server is not None and RUNNING.get(server) == process.pid:
                    del RUNNING[server]
            tg.cancel_scope.cancel()


def kill_now(server: str) -> None:
    """SIGKILL a running server's process group at once (it was left busy on a call kep gave
    up on: a polite close would only wait). Its own session: the group id is its pid."""
    pid = RUNNING.get(server)
    if pid is not None:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)


async def _read(process: Process, out: MemoryObjectSendStream[Incoming],
                params: StdioServerParameters, errlog: ErrLog) -> None:
    """stdout → messages, one line at a time. Nothing more is read while the session has not
    taken the last message (back-pressure); once it is gone, the rest is read and dropped."""
    assert process.stdout is not None
    splitter = LineSplitter()
    delivering = True
    async with out:
        with contextlib.suppress(anyio.EndOfStream, *_PIPE_ERRORS):
            while True:
                chunk = await process.stdout.receive(READ_SIZE)
                if not delivering:
                    continue
                for item in splitter.feed(chunk):
                    message, problem = await _message(item, params)
                    if problem:
                        _note(errlog, problem)
                    try:
                        await out.send(message)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        delivering = False  # the session is gone: drain to the end
                        break
        if splitter.pending and delivering:
            _note(errlog, f"ended its output with {splitter.pending} bytes and no newline; "
                          "dropped")


async def _pump_stderr(process: Process, errlog: ErrLog, done: anyio.Event) -> None:
    """The server's stderr into its log, as it comes (the log filters it)."""
    assert process.stderr is not None
    try:
        with contextlib.suppress(anyio.EndOfStream, *_PIPE_ERRORS):
            while True:
                chunk = await process.stderr.receive(READ_SIZE)
                errlog.write_bytes(chunk)
                errlog.flush()
    finally:
        done.set()


async def _message(item: bytes | Dropped, params: StdioServerParameters) -> stdio_lines.Parsed:
    if isinstance(item, Dropped):
        return stdio_lines.dropped(item)
    if len(item) > stdio_lines.THREAD_PARSE_OVER:
        return await anyio.to_thread.run_sync(
            stdio_lines.parse, item, params.encoding, params.encoding_error_handler)
    return stdio_lines.parse(item, params.encoding, params.encoding_error_handler)


def _note(errlog: ErrLog, what: str) -> None:
    """A line in the server's log, as kep writes its own there ("# kep: …")."""
    with contextlib.suppress(ValueError, OSError):  # the log may be closed already
        errlog.write(f"# kep: the server {what}\n")
        errlog.flush()


async def _write(process: Process, messages: MemoryObjectReceiveStream[SessionMessage],
                 read_send: MemoryObjectSendStream[Incoming], params: StdioServerParameters,
                 done: anyio.Event) -> None:
    assert process.stdin is not None
    try:
        async with messages:
            async for message in messages:
                text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send(
                    (text + "\n").encode(params.encoding, params.encoding_error_handler))
    except _PIPE_ERRORS:
        # The server stopped reading (or exited): end the read side too, so a request waiting
        # for its answer fails now instead of at its timeout.
        await read_send.aclose()
    finally:
        done.set()


async def _stop(process: Process, errlog: ErrLog) -> None:
    """stdin closed, then SIGTERM and SIGKILL to the server's process group, each after a
    bounded wait. Never process.wait(): a child holding the pipes would make it hang."""
    assert process.stdin is not None and process.stdout is not None
    with contextlib.suppress(*_PIPE_ERRORS):
        await process.stdin.aclose()
    for sig in (signal.SIGTERM, signal.SIGKILL, None):
        if await _exited(process, EXIT_WAIT):
            break
        if sig is not None:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, sig)  # its own session: the group id is its pid
    if process.returncode is None:  # only a process stuck in the kernel gets here
        _note(errlog, f"process {process.pid} is still alive after SIGKILL; left behind")
    with contextlib.suppress(*_PIPE_ERRORS):
        await process.stdout.aclose()  # a surviving child may hold it open: unblock the reader

    # The asyncio transport stays open (and warns when collected) while a child holds a pipe;
    # nothing public closes it, hence the attribute walk (a no-op where it is not there).
    close = getattr(getattr(getattr(process, "_process", None), "_transport", None), "close", None)
    if callable(close):
        with contextlib.suppress(PermissionError):
            close()


async def _exited(process: Process, within: float) -> bool:
    deadline = anyio.current_time() + within
    while process.returncode is None:
        if anyio.current_time() >= deadline:
            return False
        await anyio.sleep(_POLL)
    return True
