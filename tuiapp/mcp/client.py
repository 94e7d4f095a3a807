"""kep as an MCP client: configured servers run in the background; their tools join the registry.

McpManager.start() only schedules work, so neither the UI nor the first prompt waits on a slow
server (connection.py runs each one). Every state change is pushed two ways: `on_state` with a
ServerState for the functions panel, and `on_tools(key, items)` for the registry
(`Registry.set_external`). McpFormat is the runner's seam: calls go to the right server with
the runner's timeout, cancel, capping and events around them.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import anyio
from mcp import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from tuiapp.mcp import resources, stdio_transport
from tuiapp.mcp.connection import ServerConnection, ServerState, one_line, source_key
from tuiapp.mcp.peer import PeerHost, Refusing
from tuiapp.mcp.resources import Catalog, ResourceText
from tuiapp.mcp.results import result_parts, without_base64
from tuiapp.mcp.servers import MCP_JSON, McpJsonError, configured_servers
from tuiapp.security import secrets
from tuiapp.security.logfile import LogHandler
from tuiapp.settings import paths
from tuiapp.settings.config_types import Config, McpServerConfig
from tuiapp.tools.formats.base import FormatContext, ToolFormat, ToolLoadError
from tuiapp.tools.runner import DirectResult
from tuiapp.vocab.events import RegistryChanged
from tuiapp.vocab.tool_specs import BrokenTool, Invocation, ToolSpec

__all__ = ["McpFormat", "McpManager", "ServerState", "source_key"]

ToolSink = Callable[[str, list[ToolSpec | BrokenTool]], object]
StateListener = Callable[[ServerState], None]


class McpRequestError(Exception):
    """A resources/read or subscribe that failed; its text is one line for the user."""


class ExternalSink(Protocol):
    def set_external(self, key: str, items: list[ToolSpec | BrokenTool]) -> RegistryChanged: ...


class McpManager:
    """Starts, watches, restarts and calls the project's MCP servers."""

    def __init__(self, config: Config, *, on_tools: ToolSink | None = None,
                 on_state: StateListener | None = None) -> None:
        self.config = config
        self._on_tools = on_tools
        self._on_state = on_state
        self._servers: dict[str, ServerConnection] = {}
        self._problem: ServerState | None = None  # a bad mcp.json, shown like a failed server
        # Servers left working on a call kep gave up on (timed out, cancelled): busy, so at
        # the end they are killed at once rather than asked politely (about 4 s).
        self._abandoned: set[str] = set()
        # Who answers the servers' sampling and elicitation requests and sees their notices
        # (the project layer sets it; until then they are refused and declined).
        self.host: PeerHost = Refusing()

    @classmethod
    def for_registry(cls, config: Config, registry: ExternalSink, *,
                     emit: Callable[[RegistryChanged], None] | None = None,
                     on_state: StateListener | None = None) -> McpManager:
        """A manager whose tools go into `registry`; each non-empty change is also emitted
        (the UI shows it like a hot reload)."""

        def on_tools(key: str, items: list[ToolSpec | BrokenTool]) -> None:
            diff = registry.set_external(key, items)
            if emit is not None and not diff.is_empty():
                emit(diff)

        return cls(config, on_tools=on_tools, on_state=on_state)

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Schedule every enabled server on the running loop and return at once."""
        _quiet_sdk_logging()
        for cfg in self._read_servers().values():
            self._add(cfg)

    def reconfigure(self, config: Config) -> None:
        """kep.toml or mcp.json changed: restart changed servers, stop removed ones, start new."""
        renamed = config.mcp_prefix != self.config.mcp_prefix  # every tool name changes
        moved = config.project_root != self.config.project_root
        self.config = config
        if moved:  # roots/list now answers the new root: say so to every live server
            for server in self._servers.values():
                asyncio.get_running_loop().create_task(server.roots_changed())
        wanted = self._read_servers()
        for name in list(self._servers):
            if name not in wanted:
                self._shut(self._servers.pop(name))
        for name, cfg in wanted.items():
            old = self._servers.get(name)
            if old is None:
                self._add(cfg)
            elif old.cfg != cfg or (renamed and cfg.enabled):
                old.cfg = cfg
                if cfg.enabled:
                    old.restart()
                else:
                    self._shut(old)
                    old.set_state("disabled")

    def restart(self, name: str) -> None:
        """Stop the server if it runs and start it again (the command palette calls this)."""
        server = self._servers.get(name)
        if server is None:
            raise KeyError(f"no MCP server named {name!r}")
        server.restart()

    async def stop(self) -> None:
        for name in self._abandoned & set(self._servers):
            stdio_transport.kill_now(name)
        await asyncio.gather(*(s.stop(final=True) for s in self._servers.values()),
                             return_exceptions=True)

    def connection(self, name: str) -> ServerConnection | None:
        return self._servers.get(name)

    def starting(self) -> list[str]:
        return sorted(n for n, s in self._servers.items() if s.state.status == "starting")

    def startup_limit(self) -> float:
        """The longest startup_timeout of the servers (what a full wait may take)."""
        return max((s.cfg.startup_timeout for s in self._servers.values()), default=0.0)

    async def wait_for_prompt(self, text: str, short: float) -> list[str]:
        """Wait `short` seconds for every server; a server the prompt names (its name, or a
        tool it listed last time) gets up to its own startup_timeout. Returns the servers
        still starting after that, whose tools this request goes without."""
        from tuiapp.mcp import known_tools

        named = [s for s in self._servers.values() if known_tools.named_in(text, s.name)]
        loop = asyncio.get_running_loop()
        start = loop.time()
        while True:
            left = self.starting()
            waiting = [s for s in named if s.state.status == "starting"
                       and loop.time() - start < s.cfg.startup_timeout]
            if not left or (loop.time() - start >= short and not waiting):
                return left
            await asyncio.sleep(0.05)

    async def wait_settled(self, timeout: float | None = None) -> None:
        """Wait until no server is starting (for `kep call`, `kep run` and tests)."""
        async with asyncio.timeout(timeout):
            while any(s.state.status == "starting" for s in self._servers.values()):
                await asyncio.sleep(0.05)

    # ---- what the UI and the registry see ---------------------------------------------------

    def states(self) -> dict[str, ServerState]:
        out = {name: s.state for name, s in self._servers.items()}
        if self._problem:
            out[self._problem.name] = self._problem
        return out

    def catalogs(self) -> dict[str, Catalog]:
        """Each ready server's resources, templates and prompts."""
        return {n: s.catalog for n, s in self._servers.items()
                if s.client is not None and s.state.status == "ready"}

    async def read_resource(self, server: str, uri: str) -> ResourceText:
        """resources/read on `server`, capped; raises McpRequestError with one line."""
        return await self._request(server, lambda c: resources.read(c, uri))

    async def subscribe(self, server: str, uri: str) -> None:
        """resources/subscribe: its later updates reach host.resource_updated."""
        async def sub(client: Any) -> None:
            with warnings.catch_warnings():  # deprecated in 2026-07-28; what servers speak today
                warnings.simplefilter("ignore")
                await client.subscribe_resource(uri)

        await self._request(server, sub)

    async def _request(self, name: str, work: Callable[[Any], Any]) -> Any:
        server = self._servers.get(name)
        client = server.client if server else None
        if server is None or client is None:
            raise McpRequestError(f"MCP server {name} is "
                                  f"{server.state.describe() if server else 'not configured'}")
        try:
            async with asyncio.timeout(self.config.tools.timeout):
                return await work(client)
        except TimeoutError:
            raise McpRequestError(f"MCP server {name} did not answer within "
                                  f"{self.config.tools.timeout:g}s") from None
        except MCPError as e:
            raise McpRequestError(f"MCP server {name}: {e.error.message}") from None
        except (OSError, ValueError, anyio.BrokenResourceError, anyio.ClosedResourceError) as e:
            raise McpRequestError(f"MCP server {name}: {one_line(e)}") from None

    def tools(self) -> list[ToolSpec]:
        return [spec for s in self._servers.values() for spec in s.specs.values()]

    # ---- calls ---------------------------------------------------------------------------

    async def call_tool(self, spec: ToolSpec, arguments: dict[str, Any],
                        output: Callable[[str, str], None]) -> DirectResult:
        """Run one call on its server; progress notifications go to `output` as stdout lines.
        The runner around it applies the timeout, cancel, capping and events."""
        server = self._servers.get(spec.run.get("server", ""))
        client = server.client if server else None
        if server is None or client is None:
            state = server.state.describe() if server else "not configured"
            return DirectResult(False, f"Error: MCP server {spec.run.get('server')!r} is {state};"
                                       " nothing was run.")

        async def progress(done: float, total: float | None, message: str | None) -> None:
            count = f"{done:g}/{total:g}" if total else f"{done:g}"
            output("stdout", f"{message} ({count})\n" if message else f"progress {count}\n")

        # The runner's timeout fires first; the SDK's own is only a backstop (its default is
        # the start-up timeout, which must not cut a long call short).
        backstop = self.config.tools.timeout_for(spec.name) + 5
        try:
            result = await client.call_tool(spec.run["tool"], arguments,
                                            read_timeout_seconds=backstop,
                                            progress_callback=progress)
        except asyncio.CancelledError:
            self._abandoned.add(server.name)
            raise
        except MCPError as e:
            if e.code == REQUEST_TIMEOUT:
                return DirectResult(False, f"Error: MCP server {server.name} did not answer "
                                           f"within {backstop:g}s.")
            if e.code == CONNECTION_CLOSED:
                tail = server.stderr_tail()
                return DirectResult(False, f"Error: MCP server {server.name} exited during the "
                                           "call." + (f"\nstderr:\n{tail}" if tail else ""))
            return DirectResult(False, f"Error: MCP server {server.name}: {e.error.message}")
        except (OSError, ValueError, anyio.BrokenResourceError, anyio.ClosedResourceError) as e:
            # A malformed result or a broken pipe: reported, and the turn goes on.
            return DirectResult(False, f"Error: MCP server {server.name}: {one_line(e)}")
        text, images = result_parts(result)
        if result.is_error:
            return DirectResult(False, text or "Error: the tool reported an error.", images=images)
        # Structured content mirrors an image's bytes too: the image goes as an image block,
        # never as text in events, sessions or `--json` (a placeholder gives its size).
        structured = (None if result.structured_content is None
                      else without_base64(result.structured_content))
        return DirectResult(True, text, images=images, structured=structured)

    # ---- internals -------------------------------------------------------------------------

    def _read_servers(self) -> dict[str, McpServerConfig]:
        try:
            servers = configured_servers(self.config)
            if self._problem:
                self._problem = None
                self._sink(source_key(MCP_JSON), [])
        except McpJsonError as e:
            self._problem = ServerState(MCP_JSON, "failed", reason=str(e))
            self._sink(source_key(MCP_JSON), [BrokenTool(source_key(MCP_JSON), "mcp", str(e))])
            if self._on_state:
                self._on_state(self._problem)
            servers = dict(self.config.mcp_servers)
        return servers

    def _add(self, cfg: McpServerConfig) -> None:
        server = ServerConnection(cfg, lambda: self.config, partial(self._publish, cfg.name),
                                  self._state_changed, lambda: self.host)
        self._servers[cfg.name] = server
        if cfg.enabled:
            server.start()
        else:
            server.set_state("disabled")

    def _shut(self, server: ServerConnection) -> None:
        asyncio.get_running_loop().create_task(server.stop())
        server.specs = {}
        self._publish(server.name, [])

    def _publish(self, name: str, items: list[ToolSpec | BrokenTool]) -> None:
        self._sink(source_key(name), items)

    def _sink(self, key: str, items: list[ToolSpec | BrokenTool]) -> None:
        if self._on_tools:
            self._on_tools(key, items)

    def _state_changed(self, state: ServerState) -> None:
        if self._on_state:
            self._on_state(state)


class McpFormat(ToolFormat):
    """The runner's seam for MCP tools: no files and no subprocess of its own; each call goes
    to the manager (Runner prefers a format's `execute`). Give it to the runner with
    `Runner(config, spool_dir=…, formats=[*default_formats(), McpFormat(manager)])`."""

    name = "mcp"

    def __init__(self, manager: McpManager) -> None:
        self.manager = manager

    def roots(self, ctx: FormatContext) -> list[Path]:
        return []  # servers come from config, not from files the registry scans

    def candidates(self, root: Path) -> Iterable[Path]:
        return ()

    async def declare(self, path: Path, ctx: FormatContext) -> list[ToolSpec]:
        return []

    def invocation(self, spec: ToolSpec, arguments: dict[str, Any],
                   ctx: FormatContext) -> Invocation:
        raise ToolLoadError("MCP tools run through their server, not as a subprocess")

    async def execute(self, spec: ToolSpec, arguments: dict[str, Any], ctx: FormatContext,
                      output: Callable[[str, str], None]) -> DirectResult:
        return await self.manager.call_tool(spec, arguments, output)


_logging_quieted = False


def _quiet_sdk_logging() -> None:
    """The SDK logs to Python logging, whose last-resort handler writes to stderr — the TUI's
    screen. Send it to a file instead."""
    global _logging_quieted
    if _logging_quieted:
        return
    _logging_quieted = True
    target = paths.data_dir() / "logs" / "mcp-sdk.log"
    handler: logging.Handler = LogHandler(target, secrets.active)  # filtered, capped, 0600
    handler.setLevel(logging.WARNING)
    logger = logging.getLogger("mcp")
    logger.addHandler(handler)
    logger.propagate = False
