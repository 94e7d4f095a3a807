"""`kep mcp login NAME` / `kep mcp logout NAME`: OAuth for an HTTP MCP server."""

from __future__ import annotations

import argparse
import asyncio
import sys

from tuiapp.commands._common import load_config


def _leaf(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def main(args: argparse.Namespace) -> int:
    from tuiapp.mcp.oauth_store import TokenStore
    from tuiapp.mcp.servers import McpJsonError, configured_servers
    from tuiapp.security import display, secrets

    config = load_config(args)
    try:
        servers = configured_servers(config)
    except McpJsonError as e:
        print(f"kep: {display.printable_line(str(e))}", file=sys.stderr)
        return 2
    cfg = servers.get(args.name)
    shown = display.printable_line(args.name)
    if cfg is None or not cfg.url:
        known = ", ".join(sorted(n for n, c in servers.items() if c.url)) or "none"
        what = "no MCP server" if cfg is None else "not an HTTP MCP server:"
        print(f"kep: {what} {shown!s} (HTTP servers: {display.printable_line(known)})",
              file=sys.stderr)
        return 2
    if args.mcp_command == "logout":
        forgot = TokenStore(cfg.name, cfg.url).forget()
        print(f"kep: {'logged out of' if forgot else 'was not logged in to'} {shown}")
        return 0
    from tuiapp.mcp import oauth

    oauth.quiet_sdk_logging()  # the SDK logs failed flows with tracebacks: to kep's log
    def show(url: str) -> None:
        print(f"kep: open this URL in your browser to log in to {shown}:\n{url}", flush=True)

    try:
        asyncio.run(oauth.login(cfg.name, cfg.url, show))
    except KeyboardInterrupt:
        print("kep: login interrupted; nothing was stored", file=sys.stderr)
        return 130
    except Exception as e:  # the SDK's OAuth errors, HTTP errors: one line, no traceback
        leaf = _leaf(e)
        why = secrets.scrub_error(str(leaf) or type(leaf).__name__)
        print(f"kep: login to {shown} failed: {display.printable_line(why)}", file=sys.stderr)
        return 1
    print(f"kep: logged in to {shown}; the tokens are kept in kep's data folder")
    return 0
