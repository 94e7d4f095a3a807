"""Why an MCP server did not start or stopped, in words a user can act on: the exit status or
signal of a stdio server (it runs under a tiny `sh` that notes how its command ended), the
HTTP status of a url server (401: credentials), and the last lines of its stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

EXIT_MARK = "# kep: exit status "
GROUP_MARK = "# kep: process group "

# `sh -c` runs the server as its child, in the same process group (which the SDK kills as a
# whole), and appends how it ended to stderr, i.e. to the server's log. It notes its pid
# first: the SDK starts it in a session of its own, so that is the group kep may have to
# kill itself (see ServerConnection.stop).
_WRAP = f'echo "{GROUP_MARK}$$" >&2; "$@"; s=$?; echo "{EXIT_MARK}$s" >&2; exit $s'


def wrapped_command(command: str, args: list[str], path: str | None = None
                    ) -> tuple[str, list[str]]:
    """(command, args) that run the server and record its exit status. Raises
    FileNotFoundError for a command that is not installed (as spawning it would)."""
    if shutil.which(command, path=path) is None and not os.access(command, os.X_OK):
        raise FileNotFoundError(command)
    if os.name != "posix" or not os.access("/bin/sh", os.X_OK):
        return command, args
    return "/bin/sh", ["-c", _WRAP, "kep-mcp", command, *args]


def exit_description(log_text: str) -> str:
    """"exit status 3" / "killed by signal 9 (SIGKILL)" from the log, or ""."""
    for line in reversed(log_text.splitlines()):
        if line.startswith(EXIT_MARK):
            try:
                code = int(line[len(EXIT_MARK):].strip())
            except ValueError:
                return ""
            if code > 128:
                try:
                    name = f" ({signal.Signals(code - 128).name})"
                except ValueError:
                    name = ""
                return f"killed by signal {code - 128}{name}"
            return f"exit status {code}"
    return ""


def ended_with(log_text: str, stderr_tail: str) -> str:
    """"exit status 3: last | stderr | lines", "killed by signal 9 (SIGKILL), no stderr
    output", "exit status unknown, no stderr output"."""
    ended = exit_description(log_text)
    tail = stderr_tail.replace("\n", " | ")
    if not tail:
        return f"{ended or 'exit status unknown'}, no stderr output"
    return ": ".join(p for p in (ended, tail) if p)


async def exit_noted(log_tail: Callable[[], str], timeout: float = 2.0) -> None:
    """Until the wrapper has noted how the server ended (its output can close before it
    exits), for at most `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not exit_description(log_tail()) and loop.time() < deadline:
        await asyncio.sleep(0.05)


STOP_GRACE = 6.0  # seconds: the SDK's own shutdown escalation takes up to about 4


async def stopped_within_bounds(task: asyncio.Task[None], log: Path, *, cancelled: bool) -> None:
    """Wait for a server's connection task to end, bounded. A polite close is the SDK's
    (stdin closed, 2 s, SIGTERM to the group, 2 s, SIGKILL); but a cancel can land in the
    middle of it (a server failing at start being shut down), and the SDK then waits for the
    server to close its stdout: one that ignores EOF would hold kep for ever. So after a
    grace period kep kills the group itself."""
    done, _ = await asyncio.wait({task}, timeout=1.0 if cancelled else STOP_GRACE)
    if not done:
        kill_wrapper_group(log)
        await asyncio.wait({task}, timeout=STOP_GRACE)


def kill_wrapper_group(log: Path) -> None:
    """SIGKILL the process group of a server, as its wrapper noted it at the head of its log,
    if the group leader is still that wrapper (not a reused pid)."""
    try:
        with log.open("rb") as f:
            pgid = process_group(f.read(1024).decode(errors="replace"))
    except OSError:
        return
    if pgid is None:
        return
    try:
        argv = Path(f"/proc/{pgid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return  # gone already (or no /proc to check a pid against)
    if b"kep-mcp" in argv:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)


def process_group(log_text: str) -> int | None:
    """The server's process group, as its wrapper noted it in the log, or None."""
    for line in log_text.splitlines():
        if line.startswith(GROUP_MARK):
            value = line[len(GROUP_MARK):].strip()
            return int(value) if value.isdigit() and int(value) > 1 else None
    return None


class StartRefused(Exception):
    """kep will not start the server as configured; the message says why."""


def http_status(error: BaseException) -> int | None:
    """The HTTP status behind a failed start of a url server, however the SDK wrapped it."""
    seen = 0
    cur: BaseException | None = error
    while cur is not None and seen < 10:
        response = getattr(cur, "response", None)
        code = getattr(response, "status_code", None)
        if isinstance(code, int):
            return code
        text = str(cur)
        for marker in ("401 Unauthorized", "HTTP 401", "status code 401", "'401"):
            if marker in text:
                return 401
        cur = cur.__cause__ or cur.__context__
        seen += 1
    return None
