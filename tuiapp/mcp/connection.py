"""One MCP server's connection: started, listed, watched and stopped by a single task.

The SDK's task groups must be entered and left by the same task, so one task owns the
connection for its whole life; tool calls from other tasks go through `client`. The server
process's end is noticed on its read stream (EOF), its stderr goes to its log file, and every
state change is reported through the two callbacks the manager gives.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import mcp.types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from tuiapp import __version__
from tuiapp.mcp import oauth, peer, prompt_info, resources, startup, tool_meta
from tuiapp.mcp.peer import PeerHost, Refusing
from tuiapp.mcp.resources import Catalog
from tuiapp.mcp.servers import expand_headers, tool_name, unset_header_vars
from tuiapp.mcp.state import ServerState, ServerStatus
from tuiapp.mcp.stdio_transport import stdio_transport
from tuiapp.mcp.watched import watched
from tuiapp.security import secrets
from tuiapp.security.logfile import LogFile
from tuiapp.settings import paths
from tuiapp.settings.config_types import Config, McpServerConfig
from tuiapp.tools.schema import schema_error
from tuiapp.vocab.tool_specs import BrokenTool, ToolSpec

Publish = Callable[[list[ToolSpec | BrokenTool]], None]
DEBOUNCE = 0.25  # seconds a list_changed waits for more before kep relists
MAX_LIST_PAGES = 50  # a server whose tools/list never stops paginating cannot hang kep


def source_key(server: str) -> str:
    """The registry key (and ToolSpec.source) of one server's tools."""
    return f"mcp:{server}"


def log_path(server: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in server)
    return paths.data_dir() / "logs" / f"mcp-{safe}.log"


class ServerConnection:
    """One server: its connection task, its state and its current tools."""

    def __init__(self, cfg: McpServerConfig, config: Callable[[], Config], publish: Publish,
                 on_state: Callable[[ServerState], None],
                 host: Callable[[], PeerHost] | None = None) -> None:
        self.cfg = cfg
        self._host = host or (lambda: Refusing())
        self.catalog = Catalog()  # resources, templates and prompts, as last listed
        self._config, self._publish, self._on_state = config, publish, on_state
        self.log = log_path(cfg.name)
        self.state = ServerState(cfg.name, "starting", log_path=str(self.log))
        self.specs: dict[str, ToolSpec] = {}
        self._current: _Run | None = None
        self.http_status: int | None = None  # the last error status of a url server

    @property
    def name(self) -> str:
        return self.cfg.name

    @property
    def client(self) -> Client | None:
        """The live connection, while the server is ready."""
        return self._current.client if self._current else None

    def set_state(self, status: ServerStatus, reason: str = "") -> None:
        self.state = replace(self.state, status=status, tools=len(self.specs), reason=reason)
        self._on_state(self.state)

    def start(self) -> None:
        self._starting()
        self._spawn()

    def restart(self) -> None:
        self._starting()  # at once, so the panel and wait_settled() see it

        async def again() -> None:
            await self.stop()
            if self._current is None:  # a second restart meanwhile may have started it
                self._spawn()

        asyncio.get_running_loop().create_task(again())

    def _starting(self) -> None:
        self.specs = {}
        self.set_state("starting")
        self._publish([])

    def _spawn(self) -> None:
        run = self._current = _Run()
        run.task = asyncio.get_running_loop().create_task(self._run(run), name=f"mcp:{self.name}")

    async def stop(self, *, final: bool = False) -> None:  # final: kep ends; say what started
        run, self._current = self._current, None
        if run is None or run.task is None:
            return
        run.poke(stopping=True)
        if cancel := run.client is None:
            run.task.cancel()  # still connecting: nothing to close politely
        await startup.stopped_within_bounds(run.task, self.log, cancelled=cancel)
        if final and self.state.status == "starting":
            self._failed(startup.StartRefused("still starting when kep stopped waiting for it"))

    def _log_tail(self) -> str:
        try:
            with self.log.open("rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 4096))
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def stderr_tail(self, lines: int = 5) -> str:
        text = self._log_tail()
        kept = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("# kep:")]
        # Shown in error lines: a server that prints its token must not put it on screen.
        return secrets.scrub_error("\n".join(kept[-lines:]), secrets.collect(self._config()))

    async def exit_reason(self, lines: int = 3) -> str:
        """"exit status 3: last | stderr | lines" (or the signal), as far as known."""
        await startup.exit_noted(self._log_tail)  # its output can close before it exits
        return startup.ended_with(self._log_tail(), self.stderr_tail(lines))


    # ---- the connection task ------------------------------------------------------------

    async def _run(self, run: _Run) -> None:
        self._given_env()  # its env and key-shaped args are secrets before it can print them
        with contextlib.closing(LogFile(self.log, secrets.active)) as log:  # 0600, filtered, capped
            log.write(f"# kep: starting {self._describe()} at {time.strftime('%F %T')}\n")
            log.flush()
            try:
                await self._connect_and_serve(run, log)
            except asyncio.CancelledError:
                if not run.stopping:
                    raise
            except Exception as e:  # every failure (also ExceptionGroups) becomes a state
                if run is self._current:
                    self._failed(e)
            finally:
                run.client = None

    async def _connect_and_serve(self, run: _Run, log: LogFile) -> None:
        async def on_message(message: Any) -> None:
            # Called inline by the SDK's read loop: never make a request from here (the
            # connection task relists; a flood of these only sets a flag).
            if isinstance(message, types.ToolListChangedNotification):
                run.poke(relist=True)
            elif isinstance(message, (types.ResourceListChangedNotification,
                                      types.PromptListChangedNotification)):
                run.poke(recatalog=True)
            elif isinstance(message, types.ResourceUpdatedNotification):
                self._host().resource_updated(self.name, str(message.params.uri))

        client = Client(
            watched(self._transport(log), lambda: run.poke(ended=True)),
            mode="legacy",  # the handshake every deployed server speaks
            cache=None,  # list_changed must always refetch
            read_timeout_seconds=self.cfg.startup_timeout,
            message_handler=on_message,
            **peer.callbacks(self.name, self._host, lambda: self._config().project_root,
                             self._log_line(log)),
            client_info=types.Implementation(name="kep", version=__version__),
        )
        async with client:
            try:
                await self._list(client)
            except Exception as e:
                self._failed(e)
                return
            run.client = client
            await peer.set_log_level(client, self.name, self.cfg.log_level, self._host())
            await self._recatalog(client)
            self.set_state("ready")
            while True:
                await run.wake.wait()
                run.wake.clear()
                if run.stopping or run.ended:
                    break
                if run.recatalog:
                    await asyncio.sleep(DEBOUNCE)  # a burst of list_changed: one relist
                    run.recatalog = False
                    await self._recatalog(client)
                    self.set_state("ready")
                if run.relist:
                    run.relist = False
                    with contextlib.suppress(Exception):  # keep the old list; the log says why
                        await self._list(client)
                        self.set_state("ready")
            run.client = None
        if run.ended and not run.stopping:
            reason = await self.exit_reason()
            names = ", ".join(sorted(self.specs)) or "none"
            self._publish([BrokenTool(
                source_key(self.name), "mcp",
                f"MCP server {self.name} exited ({reason}; log: {self.log}); its tools ({names}) "
                "are unavailable until it is restarted")])
            self.specs = {}
            self.set_state("exited", reason)

    def _transport(self, log: LogFile) -> Any:
        if self.cfg.url:
            env = {**os.environ, **self.cfg.env}
            headers = expand_headers(self.cfg.headers, env)
            unset = unset_header_vars(self.cfg.headers, env)
            if unset:  # "Bearer " would go out: say what is missing instead of connecting
                raise startup.StartRefused(f"its headers use unset variable(s) {', '.join(unset)}: "
                                   "set them, or give them in the server's env")
            self.http_status = None
            if self.cfg.transport == "sse":  # the legacy HTTP+SSE transport
                return sse_client(self.cfg.url, headers=headers or None,
                                  timeout=self.cfg.startup_timeout,
                                  httpx_client_factory=self._http_client)
            auth = None if headers else oauth.stored_auth(self.cfg.name, self.cfg.url)  # login's
            return streamable_http_client(self.cfg.url,
                                          http_client=self._http_client(headers or None, auth=auth))
        assert self.cfg.command
        # The environment every kep tool gets (no keys), plus the server's own `env`, whose
        # ${VAR} come from kep's environment: the way to pass a key on purpose.
        env = {**secrets.child_env(self._config()), **self._given_env()}
        command, args = startup.wrapped_command(self.cfg.command, list(self.cfg.args),
                                                env.get("PATH"))
        params = StdioServerParameters(command=command, args=args, env=env,
                                       cwd=self._config().project_root)
        return stdio_transport(params, errlog=log, server=self.cfg.name)

    def _given_env(self) -> dict[str, str]:
        given = secrets.expand_vars(self.cfg.env)
        secrets.note_passed(given, self.cfg.args)  # a server that echoes them gets them redacted
        return given

    def _http_client(self, headers: dict[str, str] | None = None, timeout: Any = None,
                     auth: Any = None) -> Any:
        """The SDK's HTTP client, noting an error status: the SDK reports a refused start as
        a bare "error response", and the status says why (401: credentials)."""
        from mcp.shared._httpx_utils import create_mcp_http_client

        client = create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)

        async def note(response: Any) -> None:
            if response.status_code >= 400:
                self.http_status = response.status_code

        client.event_hooks["response"].append(note)
        return client

    def _describe(self) -> str:
        return self.cfg.url or " ".join([self.cfg.command or "", *self.cfg.args])

    async def _list(self, client: Client) -> None:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        specs: dict[str, ToolSpec] = {}
        items: list[ToolSpec | BrokenTool] = []
        for tool in tools:
            prefix = self.cfg.prefix if self.cfg.prefix is not None else self._config().mcp_prefix
            name = tool_name(self.name, tool.name, prefix)
            where = f"{source_key(self.name)}/{tool.name}"
            problem = schema_error(tool.input_schema)
            if problem is None and name in specs:
                problem = f"its name {name!r} clashes with another tool of this server"
            execution = getattr(tool, "execution", None)
            if problem is None and getattr(execution, "task_support", None) == "required":
                problem = ("it must be run as an MCP task (execution.taskSupport = required), "
                           "which kep does not support yet")
            if problem:
                items.append(BrokenTool(where, "mcp", f"{tool.name}: {problem}", name))
                continue
            specs[name] = tool_meta.spec_of(self.name, name, tool, source_key(self.name))
        self.specs = specs
        self._publish([*specs.values(), *items])
        from tuiapp.mcp import known_tools

        known_tools.remember(self.name, [*specs, *(t.name for t in tools)])

    def _failed(self, error: BaseException) -> None:
        reason = self._reason(error)
        self.specs = {}
        self._publish([BrokenTool(
            source_key(self.name), "mcp", f"MCP server {self.name} failed: {reason}")])
        self.set_state("failed", reason)

    def _reason(self, error: BaseException) -> str:
        error = _leaf(error)
        if isinstance(error, startup.StartRefused):
            return str(error)
        tail = self.stderr_tail(3).replace("\n", " | ")
        status = self.http_status or startup.http_status(error)
        if status == 401:
            why = "unauthorized (HTTP 401)"
            if self.cfg.headers:
                unset = unset_header_vars(self.cfg.headers, {**os.environ, **self.cfg.env})
                why += (f": headers use unset variable(s) {', '.join(unset)}" if unset
                        else ": check the credentials in its headers")
            else:
                why += f": {oauth.login_hint(self.name)} (or give credentials with headers)"
            return why
        if status is not None:
            return f"HTTP {status} from {self.cfg.url}"
        if isinstance(error, MCPError) and error.code == REQUEST_TIMEOUT:
            why = f"no answer within {self.cfg.startup_timeout:g}s (startup_timeout)"
            return f"{why}; its stderr: {tail}" if tail else why
        if isinstance(error, MCPError) and error.code == CONNECTION_CLOSED:
            ended = startup.exit_description(self._log_tail())
            how = "" if not ended else (
                f", {ended}" if ended.startswith("killed") else f" with {ended}")
            return (f"exited during start-up{how}: "
                    f"{tail or 'no stderr output (log: ' + str(self.log) + ')'}")
        if isinstance(error, FileNotFoundError):
            return f"command not found: {self.cfg.command}"
        return one_line(error).removeprefix("MCPError: ")  # the server's words, or kep's

    def _log_line(self, log: LogFile) -> Callable[[str], None]:
        """notifications/message from the server go to its log file (0600, filtered,
        capped), like its stderr; peer.py also shows warnings and worse as notices."""

        def write(line: str) -> None:
            with contextlib.suppress(ValueError, OSError):  # the log closes when it stops
                log.write(line)
                log.flush()

        return write

    async def _recatalog(self, client: Client) -> None:
        self.catalog = await resources.fetch(client, self.name)
        info = await prompt_info.fetch(client) if self.catalog.prompts else ()  # `/NAME`
        self.state = replace(self.state, resources=tuple(r.name for r in self.catalog.resources),
                             prompts=self.catalog.prompts, prompt_info=info)

    async def roots_changed(self) -> None:
        """The project root moved: tell the server (notifications/roots/list_changed)."""
        client = self.client
        if client is not None:
            with contextlib.suppress(Exception), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated in 2026-07-28; servers speak it
                await client.send_roots_list_changed()


@dataclass
class _Run:
    """One start of a server. A restart makes a new one, so a run that is still winding down
    can never touch its successor's connection or flags."""

    wake: asyncio.Event = field(default_factory=asyncio.Event)
    stopping: bool = False
    ended: bool = False  # the server's stream ended: the process exited
    relist: bool = False
    recatalog: bool = False  # resources or prompts changed
    client: Client | None = None
    task: asyncio.Task[None] | None = None

    def poke(self, **flags: bool) -> None:
        for name, value in flags.items():
            setattr(self, name, value)
        self.wake.set()


def _leaf(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
