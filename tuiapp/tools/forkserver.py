"""Fast cold discovery for Python tools: a fork server per Python shebang.

Most keprompt tools are `#!/usr/bin/env python3` scripts, and starting an interpreter costs
15-150 ms (more through pyenv shims); answering --list-functions costs almost nothing. So when
a refresh must declare several scripts with the same plain Python shebang, kep starts that
interpreter once (through the very same shebang command, so PATH, pyenv and venvs resolve
exactly as for the script) running forkserver_boot.py, and every script is run in a fork of it:
new session, stdin /dev/null, own pipes, executed as __main__, timeout killing its group.

Only --list-functions goes this way, never a tool call. Anything unusual (a shebang with
arguments, stdin input, another cwd/env, a server that fails to start) falls back to the plain
subprocess path. KEP_FORKSERVER=0 turns it off.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import subprocess
from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path

from tuiapp.security.sandbox import spawn
from tuiapp.tools.formats.base import ProcResult
from tuiapp.tools.proc import LIST_STDOUT_CAP, read_shebang, run_collect

MIN_SCRIPTS = 3  # below this, one interpreter start per script is as cheap
PYTHON_NAME = re.compile(r"python[0-9.]*")
BOOT = Path(__file__).with_name("forkserver_boot.py")


def python_command(shebang: str | None) -> tuple[str, ...] | None:
    """The argv prefix of a plain Python shebang (`/usr/bin/env python3`, `/x/bin/python3`)."""
    if not shebang:
        return None
    parts = [p for p in re.split(r"[ \t]+", shebang) if p]
    if len(parts) == 2 and os.path.basename(parts[0]) == "env" and PYTHON_NAME.fullmatch(parts[1]):
        return (parts[0], parts[1])
    if (
        len(parts) == 1
        and parts[0].startswith("/")
        and PYTHON_NAME.fullmatch(os.path.basename(parts[0]))
    ):
        return (parts[0],)
    return None


class PyForkServer:
    def __init__(self, command: Sequence[str], cwd: Path, env: Mapping[str, str]) -> None:
        self.command = list(command)
        self.cwd, self.env = cwd, env
        self._proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._waiting: dict[int, asyncio.Future[dict]] = {}
        self._next_id = 0
        self.alive = False

    async def start(self, timeout: float) -> bool:
        try:
            # -I: the project's folder is not on sys.path, so a checkout's base64.py (or any
            # stdlib name) is never imported in place of the real one; no PYTHON* variables.
            self._proc = await spawn.create_exec(
                [*self.command, "-I", "-c", BOOT.read_text(encoding="utf-8")],
                kind="forkserver",
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=self.cwd,
                env=dict(self.env),
                start_new_session=True,
                limit=4 * LIST_STDOUT_CAP,
            )
            assert self._proc.stdout is not None
            line = await asyncio.wait_for(self._proc.stdout.readline(), timeout)
            self.alive = json.loads(line).get("ready") is True
        except (OSError, ValueError, TimeoutError, AttributeError):
            self.alive = False
        if not self.alive:
            await self.close()
            return False
        self._reader = asyncio.create_task(self._read_replies())
        return True

    async def _read_replies(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        try:
            while line := await self._proc.stdout.readline():
                msg = json.loads(line)
                fut = self._waiting.pop(msg.get("id"), None)
                if fut is not None and not fut.done():
                    fut.set_result(msg)
        except (ValueError, asyncio.LimitOverrunError, OSError):
            pass
        self.alive = False
        for fut in self._waiting.values():
            if not fut.done():
                fut.set_result({"error": "fork server exited"})
        self._waiting.clear()

    async def run(self, path: str, args: Sequence[str], timeout: float) -> ProcResult | None:
        """The script's result, or None when the server could not run it (caller falls back)."""
        if not self.alive or self._proc is None or self._proc.stdin is None:
            return None
        self._next_id += 1
        rid = self._next_id
        fut: asyncio.Future[dict] = asyncio.get_running_loop().create_future()
        self._waiting[rid] = fut
        req = {
            "id": rid,
            "path": path,
            "args": list(args),
            "cwd": str(self.cwd),
            "timeout": timeout,
            "cap": LIST_STDOUT_CAP,
        }
        try:
            self._proc.stdin.write((json.dumps(req) + "\n").encode())
            await self._proc.stdin.drain()
            # The server enforces the timeout; this bound only guards against a wedged server.
            msg = await asyncio.wait_for(fut, timeout + 5)
        except (OSError, TimeoutError):
            self._waiting.pop(rid, None)
            return None
        if "error" in msg:
            return None
        return ProcResult(
            exit_code=msg["exit"],
            stdout=base64.b64decode(msg["stdout"]),
            stderr=base64.b64decode(msg["stderr"]),
            timed_out=bool(msg["timed_out"]),
            stdout_truncated=bool(msg["truncated"]),
        )

    async def close(self) -> None:
        self.alive = False
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()  # EOF: the server kills its children's groups and exits
        try:
            await asyncio.wait_for(proc.wait(), 2)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader


class ForkingLister:
    """A Lister (formats/base.py) that sends Python scripts to fork servers when it pays."""

    def __init__(self, cwd: Path, env: Mapping[str, str]) -> None:
        self.cwd, self.env = cwd, env
        self._servers: list[PyForkServer] = []
        self._route: dict[str, PyForkServer] = {}

    async def prepare(self, scripts: Sequence[Path], start_timeout: float) -> None:
        """Start one server per Python shebang shared by at least MIN_SCRIPTS of `scripts`,
        and the sandbox's starter for the rest (each of them is a process of its own)."""
        servers = os.environ.get("KEP_FORKSERVER", "1") != "0"
        groups: dict[tuple[str, ...] | None, list[Path]] = {}
        for path in scripts:
            groups.setdefault(python_command(read_shebang(path, as_kernel=True)), []).append(path)
        served = [cmd for cmd, members in groups.items()
                  if servers and cmd is not None and len(members) >= MIN_SCRIPTS]
        rest = [p for cmd, members in groups.items() if cmd not in served for p in members]
        servers = [PyForkServer(cmd, self.cwd, self.env) for cmd in served]  # type: ignore[arg-type]
        starting: list[Awaitable[bool | None]] = [s.start(start_timeout) for s in servers]
        if len(rest) > 1:  # their walls' starter comes up while the servers start and list
            starting.append(spawn.warm([str(rest[0])], cwd=self.cwd, env=self.env, kind="lister"))
        ups = (await asyncio.gather(*starting))[:len(servers)]
        for cmd, server, up in zip(served, servers, ups, strict=True):
            if up:
                self._servers.append(server)
                self._route.update({str(p): server for p in groups[cmd]})

    async def __call__(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        cwd: Path | str | None,
        env: Mapping[str, str] | None,
        stdin: bytes | None = None,
    ) -> ProcResult:
        server = self._route.get(argv[0]) if argv else None
        same_place = cwd is not None and Path(cwd) == self.cwd and (env is None or env is self.env)
        if server is not None and stdin is None and same_place:
            res = await server.run(argv[0], argv[1:], timeout)
            if res is not None:
                return res
        return await run_collect(argv, timeout=timeout, cwd=cwd, env=env, stdin=stdin)

    async def close(self) -> None:
        for server in self._servers:
            await server.close()
        self._servers.clear()
        self._route.clear()
