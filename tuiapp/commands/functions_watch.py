"""`kep functions --watch [--json]`: print every registry change as it happens.

For headless use and tests. The first line says the watch is in place:
    {"ready": true, "tools": 12, "broken": 1}
then one line per event:
    {"added": [...], "changed": [...], "removed": [...], "broken": [...], "recovered": [...],
     "errors": {"<source>": "<reason>"}}          (errors: only for sources reported broken)
    {"config": "reloaded"}  /  {"config_error": "FILE: KEY: why"}
Without --json the same, as short lines for people. SIGINT/SIGTERM (and a closed stdout) end
it with exit 0, the watch threads stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from typing import Any

from tuiapp.commands._common import load_config, note_untrusted
from tuiapp.project.reloader import Reloader, broken_reasons, describe
from tuiapp.project.workspace import Workspace
from tuiapp.security.display import json_printable, printable
from tuiapp.settings.config_types import Config, ConfigError
from tuiapp.vocab.events import RegistryChanged


def main(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    note_untrusted(cfg)
    ws = Workspace(cfg)
    try:
        return asyncio.run(watch(ws, as_json=bool(getattr(args, "json", False))))
    except KeyboardInterrupt:  # a second Ctrl-C while shutting down
        return 0


class _Printer:
    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.closed = False

    def __call__(self, obj: dict[str, Any], text: str) -> None:
        if self.closed:
            return
        try:
            print(json_printable(json.dumps(obj, ensure_ascii=False)) if self.as_json
                  else printable(text), flush=True)
        except BrokenPipeError:  # `| head`: the reader is gone, so are we
            self.closed = True
            with contextlib.suppress(OSError):  # no second error when Python flushes at exit
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


async def watch(ws: Workspace, *, as_json: bool) -> int:
    out = _Printer(as_json)
    main_task = asyncio.current_task()
    assert main_task is not None
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, main_task.cancel)

    def on_ready() -> None:
        registry = ws.registry
        out({"ready": True, "tools": len(registry.tools), "broken": len(registry.broken)},
            f"watching: {len(registry.tools)} tools, {len(registry.broken)} broken "
            "(Ctrl-C stops)")

    def on_tools(diff: RegistryChanged) -> None:
        if not reloader.ready.is_set():
            return  # caught up before ready: the ready line states the result
        obj: dict[str, Any] = {k: list(getattr(diff, k)) for k in
                               ("added", "changed", "removed", "broken", "recovered")}
        if diff.broken:
            obj["errors"] = broken_reasons(diff, ws.registry)
        out(obj, describe(diff, ws.registry, ws.root))

    def on_config(cfg: Config | None, error: ConfigError | None) -> None:
        if error is not None:
            out({"config_error": str(error)}, f"config not reloaded: {error} (previous kept)")
        else:
            out({"config": "reloaded"}, "config reloaded")

    reloader = Reloader(ws, on_tools=on_tools, on_config=on_config, on_ready=on_ready,
                        theme_dirs=lambda: ())
    try:
        await ws.registry.refresh()
        task = asyncio.create_task(reloader.run())
        try:
            await asyncio.shield(task)
        finally:
            reloader.stop()
            await task  # ends within a watch step: threads joined
    except asyncio.CancelledError:
        pass  # SIGINT / SIGTERM: a normal way to stop
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    return 0
