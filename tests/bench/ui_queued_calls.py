"""500 tool calls in one reply, in the headless TUI: keypress latency while they queue.

    python tests/bench/ui_queued_calls.py [--calls 500] [--sleep 0.05]

A scripted model asks for CALLS calls of `nap` (a shell tool sleeping SLEEP seconds) in one
reply; kep.toml allows them all and raises `[tools] max_calls_per_reply` to CALLS, so every
call is approved and all but `max_parallel` (8) wait, shown as "queued". A key is typed into
the prompt every 50 ms from the first call starting to the last one finishing (key sent → the
prompt's Changed message handled). Reported: keypress p95 and max, the most calls seen
running at once, how long the whole batch took, peak RSS. Target: p95 <= 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from _common import KeyTypist, isolated_env, p95, rss_mb, send_key, temp_home, verdict

NAP = """#!/bin/sh
if [ "$1" = "--list-functions" ]; then
  echo '[{"name": "nap", "description": "Sleep a little", "parameters": {"type": "object"}}]'
  exit 0
fi
sleep %s
echo napped
"""


def write_project(root: Path, calls: int, sleep: float) -> Path:
    functions = root / "prompts" / "functions"
    functions.mkdir(parents=True)
    tool = functions / "nap"
    tool.write_text(NAP % sleep)
    tool.chmod(0o755)
    (root / "kep.toml").write_text(
        '[approval]\ndefault = "allow"\n'
        f"[tools]\nbuiltins = false\nmax_parallel = 8\nmax_calls_per_reply = {calls}\n")
    return root


async def run_app(project: Path, calls: int) -> dict[str, Any]:
    from tui_helpers import ScriptedProvider

    from tuiapp.project import config as project_config
    from tuiapp.project.workspace import Workspace
    from tuiapp.providers.base import StreamEnd
    from tuiapp.ui.app import make_app
    from tuiapp.ui.messages import CoreEvent
    from tuiapp.vocab.events import ToolCallQueued, ToolCallStarted, ToolFinished
    from tuiapp.vocab.messages import ToolCall

    reply = [ToolCall(f"c{i}", "nap", {"n": i}) for i in range(calls)]
    provider = ScriptedProvider([[*reply, StreamEnd("tool_use")], [StreamEnd("end_turn")]])
    app = make_app(Workspace(project_config.load(project)), model="offline", provider=provider)
    state = {"running": 0, "most": 0, "queued": 0, "finished": 0}
    marks: dict[str, float] = {}
    keys = KeyTypist(app, every=0.05)

    def hook(message: Any) -> None:
        now = time.perf_counter()
        if isinstance(message, CoreEvent):
            ev = message.event
            if isinstance(ev, ToolCallQueued):
                state["queued"] += 1
            elif isinstance(ev, ToolCallStarted):
                marks.setdefault("started", now)
                state["running"] += 1
                state["most"] = max(state["most"], state["running"])
            elif isinstance(ev, ToolFinished):
                if ev.status != "ok":
                    print(ev.status, ev.result[:200])
                state["running"] -= 1
                state["finished"] += 1
                if state["finished"] == calls:
                    marks["finished"] = now
        keys.seen(message)

    async def typist() -> None:
        while "started" not in marks:
            await asyncio.sleep(0.005)
        await keys.type_until(lambda: "finished" in marks)

    peak = 0.0
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await app.tools_ready.wait()
        await pilot.pause(0.3)
        await pilot.press(*"go")
        send_key(app, "enter", "\r")
        typing = asyncio.create_task(typist())
        while "finished" not in marks:
            peak = max(peak, rss_mb())
            await asyncio.sleep(0.1)
        await typing
        while app.busy:  # the model's last reply
            await asyncio.sleep(0.05)
        await pilot.pause()
    return {"keys": keys.latencies, "most": state["most"], "queued": state["queued"],
            "took": marks["finished"] - marks["started"], "peak": peak}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--sleep", type=float, default=0.05)
    args = parser.parse_args()
    home = temp_home("kep-bench-queued-")
    isolated_env(home)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ui"))
    project = write_project(home / "project", args.calls, args.sleep)
    r = asyncio.run(run_app(project, args.calls))
    keys = r["keys"]
    print(f"{args.calls} calls of a {args.sleep:g} s tool in one reply (headless TUI, 120x40)")
    print(f"at most {r['most']} running at once; {r['queued']} were queued; all done in "
          f"{r['took']:.1f} s; peak RSS {r['peak']:.0f} MB")
    print(f"keypress latency p95 {p95(keys) * 1000:.1f} ms, max {max(keys, default=0) * 1000:.1f}"
          f" ms over {len(keys)} keys (<= 100 ms: {verdict(p95(keys) * 1000 <= 100)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
