#!/usr/bin/env python3
"""Sandbox overhead: one tool call, and cold discovery, with and without the walls, in one run
(same interpreter, alternating, medians). The mechanism is named in the output.

    .venv/bin/python tests/bench/sandbox_overhead.py [--calls 60] [--reps 5] [--tools 100]

Per call: a trivial `#!/bin/sh` keprompt tool run through the runner (what a model's call
costs kep), wall time per call and CPU of the children (user+sys, via RUSAGE_CHILDREN: less
noisy than wall time on a busy machine). Discovery: `kep functions --json` in a fresh
process with an empty declaration cache on a corpus of half Python, half shell tools (the
fork server and the listers are children too), walls on vs `KEP_SANDBOX_MECHANISM=none`.
Targets (issue 23): <= 5 ms more per call; discovery within 10%.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "bench"))

from discovery import make_project  # noqa: E402


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def own_cpu() -> float:
    """kep's own CPU (building the walls' command line is kep's time, not the child's)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def calls(root: Path, n: int, walls: bool) -> tuple[float, float, float]:
    """(median wall s, mean children CPU s, mean kep CPU s) per call."""
    from tuiapp.security.sandbox import spawn
    from tuiapp.security.sandbox.none import NoSandbox
    from tuiapp.settings import config
    from tuiapp.tools.runner import Runner
    from tuiapp.vocab.messages import ToolCall
    from tuiapp.vocab.tool_specs import ToolSpec

    saved = spawn._state.mechanism
    if not walls:
        spawn._state.mechanism = NoSandbox("benchmark baseline")
    try:
        exe = root / "prompts" / "functions" / "sh_tool_0000"
        spec = ToolSpec("sh_tool_0", "t", {"type": "object"}, "keprompt", str(exe),
                        run={"exe": str(exe)})
        runner = Runner(config.parse({"tools": {"builtins": False}}, "bench", root),
                        spool_dir=root / ".spool")
        walls_s = []
        cpu0, own0 = children_cpu(), own_cpu()
        for i in range(n):
            t0 = time.perf_counter()
            fin = await runner.execute(spec, ToolCall(f"c{i}", "sh_tool_0", {"text": "x"}),
                                       lambda e: None)
            walls_s.append(time.perf_counter() - t0)
            assert fin.status == "ok", fin.result
        return (statistics.median(walls_s), (children_cpu() - cpu0) / n,
                (own_cpu() - own0) / n)
    finally:
        spawn._state.mechanism = saved


def discovery(root: Path, env: dict[str, str], walls: bool) -> tuple[float, float]:
    cache = Path(env["KEP_CACHE_DIR"])
    shutil.rmtree(cache, ignore_errors=True)
    for snap in Path(env["KEP_STATE_DIR"]).rglob("*snapshot*"):
        snap.unlink()
    run_env = dict(env) if walls else {**env, "KEP_SANDBOX_MECHANISM": "none"}
    c0 = children_cpu()
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tuiapp", "functions", "--json", "--project",
                           str(root)], env=run_env, cwd=root, capture_output=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode != 0 or done.stdout.count(b'"name"') < 2:
        raise SystemExit(f"discovery failed: {done.stderr.decode()[-2000:]}")
    return wall, children_cpu() - c0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=60)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--tools", type=int, default=100)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="kep-sbx-bench-"))
    try:
        home = tmp / "home"
        env = {**os.environ, "HOME": str(home), "KEP_CONFIG_DIR": str(home / "config"),
               "KEP_DATA_DIR": str(home / "data"), "KEP_CACHE_DIR": str(home / "cache"),
               "KEP_STATE_DIR": str(home / "state"), "XDG_CACHE_HOME": str(home / ".cache")}
        os.environ.update(env)
        from tuiapp.security import trust
        from tuiapp.security.sandbox import spawn

        root = make_project(tmp / "proj", a.tools // 2, a.tools - a.tools // 2)
        trust.trust(root)
        mech = spawn.mechanism()
        print(f"mechanism: {mech.name}" + (f" (unavailable: {mech.missing()})"
                                           if mech.missing() else ""))
        print(f"load average: {os.getloadavg()[0]:.2f} (figures under load are not a quiet "
              "machine's)")
        on_w, on_c, off_w, off_c, on_k, off_k = [], [], [], [], [], []
        for _ in range(3):  # alternating rounds
            w, c, k = asyncio.run(calls(root, a.calls // 3, False))
            off_w.append(w)
            off_c.append(c)
            off_k.append(k)
            w, c, k = asyncio.run(calls(root, a.calls // 3, True))
            on_w.append(w)
            on_c.append(c)
            on_k.append(k)
        ow, nw = statistics.median(off_w), statistics.median(on_w)
        oc, nc = statistics.mean(off_c), statistics.mean(on_c)
        print(f"per call     without {ow * 1000:7.2f} ms   with {nw * 1000:7.2f} ms   "
              f"+{(nw - ow) * 1000:.2f} ms wall (target <= 5 ms)")
        print(f"  child CPU  without {oc * 1000:7.2f} ms   with {nc * 1000:7.2f} ms   "
              f"+{(nc - oc) * 1000:.2f} ms")
        ok, nk = statistics.mean(off_k), statistics.mean(on_k)
        print(f"  kep CPU    without {ok * 1000:7.2f} ms   with {nk * 1000:7.2f} ms   "
              f"+{(nk - ok) * 1000:.2f} ms")
        d_on, d_off = [], []
        discovery(root, env, True)  # untimed warm-up of the page cache
        for _ in range(a.reps):
            d_off.append(discovery(root, env, False))
            d_on.append(discovery(root, env, True))
        w_off = statistics.median(w for w, _ in d_off)
        w_on = statistics.median(w for w, _ in d_on)
        c_off = statistics.median(c for _, c in d_off)
        c_on = statistics.median(c for _, c in d_on)
        print(f"discovery ({a.tools} tools, cold)  without {w_off * 1000:7.1f} ms   with "
              f"{w_on * 1000:7.1f} ms   ratio {w_on / w_off:.3f} (target <= 1.10)")
        print(f"  CPU of the process tree   without {c_off * 1000:7.1f} ms   with "
              f"{c_on * 1000:7.1f} ms   ratio {c_on / c_off:.3f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
