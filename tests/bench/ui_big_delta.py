"""One huge reply delta into the headless TUI: time to first draw, keys, memory.

    python tests/bench/ui_big_delta.py [--sizes 200000 2000000 10000000] [--kinds plain prose]

A scripted provider answers with ONE text delta of N characters, then ends the reply:
  - plain: one line, no space and no newline (a base64 blob, a minified file);
  - prose: words and newlines (one paragraph per 20 lines, a blank line between).
The end of the reply carries a marker. Measured per case, each in its own process (so its peak
RSS is its own), 120x40:
  - first draw: delta handed to the UI → the marker on screen (what follows a streaming
    reply is its end);
  - keypress latency: a key typed into the prompt every 100 ms, from the request until 1 s
    after the first draw (key sent → the prompt's Changed message handled), while the reply is
    also recorded in a session store, as `kep` does;
  - the longest stall of the event loop over the same time (a task waking every 5 ms:
    keys meet a stall only by chance);
  - peak RSS of the process (sampled by a thread every 10 ms) and its growth over the idle app.
Baseline, in the same run and the same way: a 1 KB delta. Targets: first draw <= 1 s, key
p95 <= 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import subprocess
import sys
import time
from typing import Any

from _common import (
    KeyTypist,
    RssSampler,
    StallWatch,
    isolated_env,
    p95,
    rss_mb,
    send_key,
    temp_home,
    verdict,
)

MARK = "ENDMARK"


def reply_text(kind: str, size: int) -> str:
    if kind == "plain":
        return "x" * (size - len(MARK)) + MARK
    line = "the quick brown fox jumps over the lazy dog and keeps going on " * 1
    para = line * 20 + "\n\n"
    body = (para * (size // len(para) + 1))[: size - len(MARK) - 1]
    return body + " " + MARK


async def one_case(kind: str, size: int) -> dict[str, Any]:
    from ui.tui_helpers import ScriptedProvider, app_for, make_project

    from tuiapp.conversation.store import Store
    from tuiapp.providers.base import StreamEnd
    from tuiapp.ui.messages import ReplyText
    from tuiapp.ui.widgets.prompt_input import PromptInput
    from tuiapp.vocab.events import TextDelta

    text = reply_text(kind, size)
    provider = ScriptedProvider([[TextDelta(text), StreamEnd("end_turn")]])
    home = temp_home("kep-bench-bigdelta-")
    store = Store.open()  # as `kep` runs: the reply is recorded while it is drawn
    app = app_for(make_project(home / "project"), provider=provider, store=store)
    typist = KeyTypist(app)
    marks: dict[str, float] = {}

    def hook(message: Any) -> None:
        if isinstance(message, ReplyText):
            marks.setdefault("delta", time.perf_counter())
        typist.seen(message)

    def on_screen() -> bool:
        return any(MARK in strip.text for strip in app.screen._compositor.render_strips())

    async def watcher() -> None:
        while "delta" not in marks:
            await asyncio.sleep(0.005)
        while not on_screen():
            await asyncio.sleep(0.02)
        marks["drawn"] = time.perf_counter()

    sampler = RssSampler()
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await app.tools_ready.wait()
        await pilot.pause(0.5)
        gc.collect()
        before = rss_mb()
        sampler.start()
        stalls = StallWatch()
        stalls.start()
        app.query_one(PromptInput).load_text("go")
        send_key(app, "enter", "\r")  # not pilot.press: it would wait for the whole reply
        watching = asyncio.create_task(watcher())
        # Keys from the request on (the reply is received, recorded and drawn meanwhile)
        # until 1 s after the first draw.
        typing = typist.type_until(
            lambda: "drawn" in marks and time.perf_counter() > marks["drawn"] + 1.0)
        await asyncio.wait_for(asyncio.gather(watching, typing), 600)
        stalls.stop()
    store.close()
    sampler.stop.set()
    sampler.join()
    latencies = typist.latencies
    return {"first_draw": marks["drawn"] - marks["delta"], "keys": latencies,
            "key_p95": p95(latencies), "key_max": max(latencies, default=0.0),
            "stall": stalls.worst, "before": before, "peak": sampler.peak}


def run_case(kind: str, size: int) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--case", f"{kind}:{size}"],
                         capture_output=True, text=True, timeout=900)
    if out.returncode:
        raise SystemExit(f"case {kind}:{size} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200_000, 2_000_000, 10_000_000])
    parser.add_argument("--kinds", nargs="+", default=["plain", "prose"])
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    isolated_env(temp_home("kep-bench-bigdelta-home-"))
    if args.case:
        kind, size = args.case.split(":")
        print(json.dumps(asyncio.run(one_case(kind, int(size)))))
        return 0
    base = run_case("prose", 1000)
    print("one reply delta into the TUI (headless, 120x40); baseline: a 1 KB delta")
    print(f"{'case':>16}  {'first draw':>10}  {'× base':>7}  {'key p95':>8}  {'key max':>8}"
          f"  {'stall':>6}  {'peak RSS':>9}  {'growth':>7}")

    def row(name: str, r: dict[str, Any]) -> None:
        ratio = r["first_draw"] / base["first_draw"] if base["first_draw"] else float("nan")
        print(f"{name:>16}  {r['first_draw']:9.2f}s  {ratio:7.1f}  {r['key_p95'] * 1000:6.0f}ms"
              f"  {r['key_max'] * 1000:6.0f}ms  {r['stall'] * 1000:4.0f}ms  {r['peak']:6.0f} MB"
              f"  {r['peak'] - r['before']:4.0f}"
              f" MB  (draw <= 1 s: {verdict(r['first_draw'] <= 1)}, key p95 <= 100 ms: "
              f"{verdict(r['key_p95'] <= 0.1)})")

    row("baseline 1 KB", base)
    for size in args.sizes:
        for kind in args.kinds:
            row(f"{kind} {size / 1e6:g} MB", run_case(kind, size))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
