"""A tool printing 50 MB into a tool pane of the headless TUI: memory and responsiveness.

    python tests/bench/ui_flood.py [--mb 50]

On the offline model, in a temp project whose kep.toml allows every call, `flood` runs a
keprompt tool that writes MB megabytes of 100-byte lines to stdout as fast as it can (and a few
lines to stderr). Measured in the same run:
  - baseline: the same tool with its stdout read by a bare subprocess pipe (no kep);
  - kep: RSS of the process before the call and its peak during the call (sampled every 10 ms
    by a thread), time from the call starting to the pane showing it finished, and keypress
    latency: a key typed into the prompt every 100 ms while the tool runs (key sent → the
    prompt's Changed message handled).
Targets: RSS growth <= 100 MB; keypress p95 <= 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import KeyTypist, RssSampler, isolated_env, p95, rss_mb, send_key, temp_home, verdict

FLOOD = '''#!{python}
import json, sys
if sys.argv[1:] == ["--list-functions"]:
    print(json.dumps([{{"name": "flood", "description": "Print a lot",
                       "parameters": {{"type": "object", "properties": {{}}}}}}]))
    sys.exit(0)
sys.stdin.read()
block = ("x" * 99 + "\\n") * 10_000  # 1 MB
for i in range({mb}):
    sys.stdout.write(block)
    if i % 10 == 0:
        print(f"flood: {{i}} MB written", file=sys.stderr, flush=True)
sys.stdout.flush()
'''


def write_project(root: Path, mb: int) -> Path:
    functions = root / "prompts" / "functions"
    functions.mkdir(parents=True)
    tool = functions / "flood"
    tool.write_text(FLOOD.format(python=sys.executable, mb=mb))
    tool.chmod(0o755)
    (root / "kep.toml").write_text('[approval]\ndefault = "allow"\n[tools]\nbuiltins = false\n'
                                   'timeout = 300\n')
    return root


def baseline(tool: Path) -> float:
    """The tool with its stdout read from a pipe and thrown away."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([str(tool), "flood"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    while proc.stdout.read(1 << 16):
        pass
    proc.wait()
    return time.perf_counter() - t0


async def run_app(project: Path) -> dict[str, Any]:

    from tuiapp.project import config as project_config
    from tuiapp.project.workspace import Workspace
    from tuiapp.ui.app import make_app
    from tuiapp.ui.messages import CoreEvent
    from tuiapp.ui.widgets.tool_panes import ToolPanes
    from tuiapp.vocab.events import ToolCallStarted, ToolFinished

    app = make_app(Workspace(project_config.load(project)), model="offline")
    marks: dict[str, float] = {}
    finished: list[ToolFinished] = []
    keys = KeyTypist(app, timeout=10.0)

    def hook(message: Any) -> None:
        now = time.perf_counter()
        if isinstance(message, CoreEvent):
            if isinstance(message.event, ToolCallStarted):
                marks.setdefault("started", now)
            elif isinstance(message.event, ToolFinished):
                marks.setdefault("finished", now)
                finished.append(message.event)
        keys.seen(message)

    async def typist() -> None:
        while "started" not in marks:
            await asyncio.sleep(0.005)
        await keys.type_until(lambda: "finished" in marks)

    sampler = RssSampler()
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await app.tools_ready.wait()
        await pilot.pause(0.5)
        gc.collect()
        before = rss_mb()
        sampler.start()
        await pilot.press(*"flood")
        send_key(app, "enter", "\r")  # not pilot.press: it would wait for the whole reply
        typing = asyncio.create_task(typist())
        while not finished:
            await asyncio.sleep(0.02)
        await typing
        await pilot.pause()
        shown = time.perf_counter() - marks["started"]
        pane = app.query_one(ToolPanes).pane(finished[0].call_id)
        lines = pane.output.line_count if pane else 0
        dropped = pane.output.dropped if pane else 0
        while app.busy:  # the offline model's summary
            await asyncio.sleep(0.05)
        await pilot.pause()
        after = rss_mb()
    sampler.stop.set()
    sampler.join()
    return {"before": before, "peak": max(sampler.peak, after), "after": after,
            "shown": shown, "tool_ms": finished[0].duration_ms, "status": finished[0].status,
            "lines": lines, "dropped": dropped, "keys": keys.latencies}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=50)
    args = parser.parse_args()
    home = temp_home("kep-bench-flood-")
    isolated_env(home)
    project = write_project(home / "project", args.mb)

    base = baseline(project / "prompts" / "functions" / "flood")
    r = asyncio.run(run_app(project))
    growth = r["peak"] - r["before"]
    keys = r["keys"]
    print(f"tool printing {args.mb} MB into a pane (headless, 120x40)")
    print(f"baseline: the tool into a bare pipe          {base:6.2f} s")
    print(f"kep: call started → pane shows it finished   {r['shown']:6.2f} s "
          f"(tool {r['tool_ms'] / 1000:.2f} s, {r['status']}); pane keeps {r['lines']} lines, "
          f"{r['dropped']:,} dropped")
    print(f"RSS before {r['before']:.1f} MB, peak {r['peak']:.1f} MB, after {r['after']:.1f} MB "
          f"→ growth {growth:.1f} MB (<= 100 MB: {verdict(growth <= 100)})")
    worst = max(keys, default=0) * 1000
    print(f"keypress latency p95 {p95(keys) * 1000:.1f} ms, max {worst:.1f} ms"
          f" over {len(keys)} keys (<= 100 ms: {verdict(p95(keys) * 1000 <= 100)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
