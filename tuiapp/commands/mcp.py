"""`kep mcp serve`: this project's tools (and prompts, and with --resources its files) over MCP
on stdio, or on Streamable HTTP behind a bearer token with --http; hot-reloaded."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import socket
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from tuiapp.commands._common import load_config, require_trust
from tuiapp.settings.config_types import Config, ConfigError

if TYPE_CHECKING:
    from tuiapp.mcp.server import KepMcpServer

# Set in the environment of everything `kep mcp serve` starts, so a project whose mcp.json
# names `kep mcp serve` for itself does not start itself again, and again.
SERVING_ENV = "KEP_MCP_SERVING"


def main(args: argparse.Namespace) -> int:
    if args.mcp_command == "serve":
        if getattr(args, "http", None):
            return _main_http(args)
        config = load_config(args)
        require_trust(config)  # serving it would run its code for whoever connects
        with _protocol_fds() as (wire_in, wire_out):
            return asyncio.run(serve(config, wire_in, wire_out, allow_ask=args.allow_ask,
                                     resources=args.resources))
    if args.mcp_command in ("login", "logout"):
        from tuiapp.commands.mcp_login import main as login_main

        return login_main(args)
    print(f"kep: unknown mcp action {args.mcp_command!r}", file=sys.stderr)
    return 2


def _main_http(args: argparse.Namespace) -> int:
    from tuiapp.mcp.http_serve import TOKEN_ENV, AddressError, bind, parse_address, token_from
    from tuiapp.security import secrets

    try:
        host, port = parse_address(args.http, allow_remote=args.allow_remote)
        token, generated = token_from(os.environ)
    except AddressError as e:
        print(f"kep: {e}", file=sys.stderr)
        return 2
    os.environ.pop(TOKEN_ENV, None)  # no tool kep runs inherits it
    secrets.note_passed({TOKEN_ENV: token})  # and none that found it could send it back
    config = load_config(args)
    require_trust(config)
    try:
        sock = bind(host, port)
    except OSError as e:
        print(f"kep: cannot listen on {args.http}: {e.strerror or e}", file=sys.stderr)
        return 2
    return asyncio.run(serve(config, -1, -1, allow_ask=args.allow_ask,
                             resources=args.resources, http=(sock, token, generated)))


@contextlib.contextmanager
def _protocol_fds() -> Iterator[tuple[int, int]]:
    """Keep private copies of fds 0 and 1 for the protocol, and point fd 1 at stderr and fd 0
    at /dev/null for the rest of the process: nothing kep or a tool prints can reach the wire
    and no child can eat the client's messages."""
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    try:
        yield wire_in, wire_out
    finally:
        os.close(wire_in)
        os.close(wire_out)


FIRST_LIST_WAIT = 30.0  # the longest the first tools/list waits for kep's own MCP servers


async def serve(config: Config, wire_in: int, wire_out: int, *, allow_ask: bool = False,
                resources: bool = False,
                http: tuple[socket.socket, str, bool] | None = None) -> int:
    import anyio
    from mcp.server.stdio import stdio_server

    from tuiapp.mcp.client import McpFormat, McpManager
    from tuiapp.mcp.served_resources import ProjectResources
    from tuiapp.mcp.server import FilteredWire, KepMcpServer
    from tuiapp.project.reloader import Reloader
    from tuiapp.project.served_prompts import ProjectPrompts
    from tuiapp.project.workspace import Workspace
    from tuiapp.settings import paths
    from tuiapp.tools.formats import default_formats
    from tuiapp.tools.runner import Runner
    from tuiapp.vocab.events import RegistryChanged

    workspace = Workspace(config)
    if config.approval.mode != "ask":
        workspace.set_mode(config.approval.mode)  # --mode or the files: kept over reloads
    await workspace.registry.refresh()
    server: KepMcpServer | None = None

    def tools_changed(diff: RegistryChanged) -> None:
        if server is not None:
            asyncio.get_running_loop().create_task(server.tools_changed())

    root = str(config.project_root)
    serving = [r for r in os.environ.get(SERVING_ENV, "").split(os.pathsep) if r]
    manager: McpManager | None = None
    if root not in serving:  # MCP servers' tools are served too (kep as an aggregator)
        os.environ[SERVING_ENV] = os.pathsep.join([*serving, root])
        manager = McpManager.for_registry(config, workspace.registry, emit=tools_changed)
        manager.start()
    formats = [*default_formats(), *([McpFormat(manager)] if manager else [])]
    runner = Runner(config, spool_dir=paths.data_dir() / "spool" / f"mcp-serve-{os.getpid()}",
                    formats=formats)
    async def servers_up() -> None:  # bounded: a server never ready is listed later
        if manager is not None:
            await manager.wait_settled(min(manager.startup_limit(), FIRST_LIST_WAIT))

    server = KepMcpServer(lambda: workspace.registry.tools, runner.execute,
                          lambda: workspace.config.approval, allow_ask=allow_ask, env=os.environ,
                          before_first_list=servers_up, hooks=workspace.hooks(),
                          prompts=ProjectPrompts(config.project_root),
                          resources=ProjectResources(config.project_root) if resources else None)

    async def on_config(cfg: Config | None, error: ConfigError | None) -> None:
        if error is not None:
            print(f"kep: {error} (keeping the previous config)", file=sys.stderr)
            return
        if cfg is not None:
            runner.reconfigure(cfg)
            if manager is not None:
                manager.reconfigure(cfg)
        await server.tools_changed()  # approval rules decide what is listed

    reloader = Reloader(workspace, on_tools=server.tools_changed, on_config=on_config)
    reload_task = asyncio.create_task(reloader.run())
    try:
        if http is not None:
            await _serve_http(server, *http)
        else:
            stdin = anyio.wrap_file(io.TextIOWrapper(os.fdopen(wire_in, "rb", closefd=False),
                                                     encoding="utf-8", errors="replace"))
            stdout = anyio.wrap_file(FilteredWire(io.TextIOWrapper(  # no key reaches the client
                os.fdopen(wire_out, "wb", closefd=False), encoding="utf-8")))
            async with stdio_server(stdin, stdout) as (read, write):
                await server.server.run(read, write, server.init_options())
    finally:
        reloader.stop()
        reload_task.cancel()
        await asyncio.gather(reload_task, return_exceptions=True)
        if manager is not None:
            await manager.stop()
    return 0


async def _serve_http(server: KepMcpServer, sock: socket.socket, token: str,
                      generated: bool) -> None:
    from tuiapp.mcp.http_serve import TOKEN_ENV, serve_http, url_of

    print(f"kep: serving MCP (Streamable HTTP) on {url_of(sock)}", file=sys.stderr)
    if generated:  # printed once, for the user to give the client; never logged
        print(f"kep: bearer token: {token}  (set {TOKEN_ENV} to choose one)", file=sys.stderr)
    else:
        print(f"kep: bearer token: the value of {TOKEN_ENV}", file=sys.stderr)
    sys.stderr.flush()
    await serve_http(server.server, sock, token)
