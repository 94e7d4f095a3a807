"""`kep functions`: every tool kep found, and why the broken ones are broken.

On an unchanged tree this is the warm path: stat calls and one cache read per tool directory,
no tool process, no event loop, no heavy import (no asyncio, jsonschema, textual, SDKs).
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tuiapp.commands._common import load_config, note_untrusted, show_source
from tuiapp.settings import paths
from tuiapp.vocab.tool_specs import BrokenTool, ToolSpec

if TYPE_CHECKING:
    import argparse

    from tuiapp.project.workspace import Workspace
    from tuiapp.tools.listing_snapshot import Recorder


def main(args: argparse.Namespace) -> int:
    if getattr(args, "watch", False):
        from tuiapp.commands.functions_watch import main as watch
        from tuiapp.tools import lifetime

        lifetime.arm()  # before anything is spawned: nothing it starts outlives kep
        return watch(args)
    snapshot = _recorder(args)
    try:
        return _list(args, snapshot)
    finally:
        if snapshot is not None:
            snapshot.close()


def _recorder(args: argparse.Namespace) -> Recorder | None:
    """The listing snapshot's witness, for the form the next `kep functions --json` may be
    answered from (see tools.listing_snapshot)."""
    if not args.json or any(getattr(args, flag, False) for flag in (
            "trust", "check", "light_schema", "watch")):
        return None
    from tuiapp.commands._common import project_root
    from tuiapp.security.trust import STATE_FILE
    from tuiapp.tools.listing_snapshot import Recorder

    user_files = [str(paths.user_config_file()), str(paths.state_dir() / STATE_FILE)]
    try:
        return Recorder(getattr(args, "project", None), str(project_root(args)), user_files)
    except OSError:  # no working directory (removed under us): list without a snapshot
        return None


def _list(args: argparse.Namespace, snapshot: Recorder | None) -> int:
    cfg = load_config(args)
    note_untrusted(cfg)
    from tuiapp.project.workspace import Workspace

    ws = Workspace(cfg)
    if snapshot is not None:
        snapshot.add_roots(str(r) for r in ws.registry.watch_roots())
    # Nothing changed and no MCP server to ask: answered from the cache, no process started.
    cached = not ws.has_mcp_servers() and ws.registry.refresh_from_cache()
    if not cached:
        import asyncio

        from tuiapp.tools import lifetime

        lifetime.arm()
        asyncio.run(_refresh(ws))
    registry = ws.registry
    if getattr(args, "light_schema", False):
        from tuiapp.tools.formats.extensions import light_schema

        text = light_schema(registry.tools.values())
        if text:
            print(text)
        else:
            print("kep: no extension packs (extensions/**/*_tool.py) found", file=sys.stderr)
        return 0
    entries = registry.entries()
    if getattr(args, "check", False):
        from tuiapp.commands.functions_check import run_check

        return run_check(registry, entries, as_json=args.json, strict=args.strict)
    if args.json:
        text = json_listing(entries)
        sys.stdout.write(text)
        # Configured sources: whether one is a root can depend on paths that are no root
        # (a dir that does not exist yet), which no witness covers.
        if (snapshot is not None and cached and not cfg.tools.sources
                and registry.keys_are_files_alone()):
            snapshot.save(text)
        return 0
    print_table(entries, cfg.project_root)
    return 0


def json_listing(entries: list[ToolSpec | BrokenTool]) -> str:
    """An indented JSON array, one entry per line: json.dump with indent= runs the encoder in
    pure Python, ten times slower than dumps() per entry with 1,000 tools."""
    if not entries:
        return "[]\n"
    encode = json.JSONEncoder(ensure_ascii=False).encode  # one encoder, not one per entry
    items = ",\n".join("  " + encode(e.to_json()) for e in entries)
    return f"[\n{items}\n]\n"


async def _refresh(ws: Workspace) -> None:
    """Scan the tool dirs; with MCP servers configured, also wait (bounded by each server's
    startup_timeout) until they are ready or failed, so their tools and errors are listed."""
    ws.start_mcp()
    try:
        await ws.registry.refresh()
        if ws.mcp is not None:
            # every server's own startup_timeout (mcp.json ones too), and a little more, so a
            # server that times out is listed as failed rather than missing
            limit = ws.mcp.startup_limit() + 2.0
            with contextlib.suppress(TimeoutError):
                await ws.mcp.wait_settled(limit)
    finally:
        await ws.aclose()


def print_table(entries: list[ToolSpec | BrokenTool], root: Path) -> None:
    import shutil  # here, not at the top: `--json` needs neither (nor bz2, lzma, unicodedata)

    from tuiapp.security.display import printable, printable_line

    if not entries:
        print(f"No tools found. Add executables to {root / 'prompts' / 'functions'} "
              "(or run `kep init` to copy the built-ins there).")
        return
    rows = []
    for e in entries:
        if isinstance(e, ToolSpec):
            desc = (e.description.strip().splitlines() or [""])[0]
            rows.append((printable_line(e.name), e.format,
                         printable_line(show_source(e.source, root)), "ok", printable_line(desc)))
        else:
            rows.append(("-", e.format, printable_line(show_source(e.source, root)), "broken",
                         printable(e.error)))
    head = ("NAME", "FORMAT", "SOURCE", "STATUS", "DESCRIPTION")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
    width = shutil.get_terminal_size((120, 24)).columns
    room = max(20, width - sum(widths) - 8)
    for r in [head, *rows]:
        cells = [r[i].ljust(widths[i]) for i in range(4)]
        desc = r[4]
        if r[3] == "ok" and len(desc) > room:  # errors are never cut: they say what to fix
            desc = desc[: room - 1] + "…"
        print("  ".join([*cells, desc]).rstrip())
    ok = sum(1 for e in entries if isinstance(e, ToolSpec))
    broken = len(entries) - ok
    print(f"\n{ok} tool{'s' if ok != 1 else ''}" + (f", {broken} broken" if broken else ""))
