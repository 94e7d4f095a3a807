#!/usr/bin/env python3
"""Hot reload latency: from a tool file's write to the registry's change event.

    .venv/bin/python tests/bench/reload.py [--edits N]

For one `#!/usr/bin/env python3` executable and one `#!/bin/sh` executable in a project's
prompts/functions/ (built-ins on, as by default), N edits (default 50) each change the
description; each is timed from just before the write to the moment the Reloader hands over
the RegistryChanged event naming the tool as changed. The floor is the same executable's own
`EXE --list-functions` run time (spawn to exit), measured N times in the same run: no reload
can beat it, since the new description comes from running the file.
Targets: p50 <= floor + 100 ms, p95 <= floor + 250 ms. The split of the overhead is printed
too: write → batch (the watcher) and batch → event (the registry refresh minus the listing).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _common import isolated_env, median, p95, temp_home, verdict

from tuiapp.project import config as project_config
from tuiapp.project.reloader import Reloader
from tuiapp.project.workspace import Workspace
from tuiapp.vocab.events import RegistryChanged

PY_TOOL = """#!/usr/bin/env python3
import json, sys
if sys.argv[1:] == ["--list-functions"]:
    print(json.dumps([{"name": "bench_py", "description": DESC,
                       "parameters": {"type": "object", "properties": {}}}]))
    sys.exit(0)
print("ran")
"""

SH_TOOL = """#!/bin/sh
if [ "$1" = --list-functions ]; then
  echo '[{"name":"bench_sh","description":DESC,"parameters":{"type":"object","properties":{}}}]'
  exit 0
fi
echo ran
"""


def tool_text(template: str, i: int) -> str:
    return template.replace("DESC", json.dumps(f"edit number {i}"))


def floor_ms(exe: Path, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run([str(exe), "--list-functions"], stdout=subprocess.DEVNULL, check=True)
        out.append((time.perf_counter() - t) * 1000)
    return out


async def edit_latencies(ws: Workspace, exe: Path, template: str, name: str, n: int
                         ) -> tuple[list[float], list[float]]:
    """(write → event, write → batch) in ms for n edits."""
    events: asyncio.Queue[tuple[float, RegistryChanged]] = asyncio.Queue()
    batch_at: list[float] = []
    refresh = ws.registry.refresh

    async def timed_refresh(paths: object = None) -> RegistryChanged:
        batch_at.append(time.perf_counter())
        return await refresh(paths)  # type: ignore[arg-type]

    ws.registry.refresh = timed_refresh  # type: ignore[method-assign]
    reloader = Reloader(ws, on_tools=lambda d: events.put_nowait((time.perf_counter(), d)),
                        theme_dirs=lambda: ())
    task = asyncio.create_task(reloader.run())
    await asyncio.wait_for(reloader.ready.wait(), 30)
    total, watch = [], []
    try:
        for i in range(1, n + 1):
            batch_at.clear()
            t = time.perf_counter()
            exe.write_text(tool_text(template, i))
            while True:
                at, diff = await asyncio.wait_for(events.get(), 30)
                if name in diff.changed:
                    break
            total.append((at - t) * 1000)
            watch.append((batch_at[0] - t) * 1000)
            await asyncio.sleep(0.05)  # the next save comes a moment later, as a person's
    finally:
        reloader.stop()
        await task
        ws.registry.refresh = refresh  # type: ignore[method-assign]
    return total, watch


def row(label: str, values: list[float]) -> str:
    return f"  {label:<24} p50 {median(values):7.1f} ms   p95 {p95(values):7.1f} ms"


async def main_async(n: int) -> bool:
    home = temp_home("kep-bench-reload-")
    isolated_env(home)
    ok = True
    try:
        root = home / "proj"
        functions = root / "prompts" / "functions"
        functions.mkdir(parents=True)
        ws = Workspace(project_config.load(root))
        for template, name in ((PY_TOOL, "bench_py"), (SH_TOOL, "bench_sh")):
            exe = functions / name
            exe.write_text(tool_text(template, 0))
            exe.chmod(0o755)
            await ws.registry.refresh()  # built-ins and the tool, before timing
            assert name in ws.registry.tools, ws.registry.broken
            floor = floor_ms(exe, n)
            total, watch = await edit_latencies(ws, exe, template, name, n)
            over50, over95 = median(total) - median(floor), p95(total) - p95(floor)
            good = over50 <= 100 and over95 <= 250
            ok = ok and good
            print(f"{name} ({template.splitlines()[0]}), {n} edits:")
            print(row("write → registry event", total))
            print(row("floor: --list-functions", floor))
            print(f"  {'difference':<24} p50 {over50:7.1f} ms   p95 {over95:7.1f} ms   "
                  f"(targets +100 / +250 ms: {verdict(good)})")
            print(row("of which write → batch", watch))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--edits", type=int, default=50)
    args = parser.parse_args()
    sys.exit(0 if asyncio.run(main_async(args.edits)) else 1)


if __name__ == "__main__":
    main()
