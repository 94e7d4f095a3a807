#!/usr/bin/env python3
"""Sandbox overhead: one tool call, and cold discovery, with and without the walls, in one run
(same interpreter, alternating rounds, medians). The mechanism is named in the output.

    .venv/bin/python tests/bench/sandbox_overhead.py [--calls 40] [--rounds 3] [--reps 9]
                                                     [--tools 100]

Per call: a trivial `#!/bin/sh` keprompt tool run through the runner (what a model's call
costs kep), in a fresh process per round, walls on and `none` alternating. Printed: wall time
per call (median), kep's own CPU per call (getrusage of kep's process), and the CPU of
everything kep started for it (`perf stat -p` on kep's process and on what it runs already,
the walls' resident starter among them: it follows every descendant; getrusage(RUSAGE_CHILDREN)
cannot, bubblewrap's monitor exits without reaping the PID namespace's init, so that CPU never
reaches kep). Without perf the children's CPU is n/a. Also printed: how many of the calls the
walls' resident starter started (security/sandbox/starters.py; the rest, a bwrap each).
Then the parts of one sandboxed start, measured the same way: a plain exec, bubblewrap with
kep's walls, and nsenter (how a call with network joins the namespace of kep's proxy).

Discovery: `kep functions --json` in a fresh process with an empty declaration cache on a
corpus of half Python, half shell tools (the fork server and the listers are children too),
walls on vs `KEP_SANDBOX_MECHANISM=none`, in pairs whose order turns each time; the sandbox's
private caches and its remembered probe are kept between runs (as the user's own caches are,
without the walls). Printed: the ratio of the medians, and the median and range of each
pair's ratio (a machine's drift shows in the range, not in the median).
Targets (issue 23): <= 5 ms more per call; discovery within 10%.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import signal
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


def _perf() -> str | None:
    """perf, when it is there and may count this user's processes."""
    perf = shutil.which("perf")
    if perf is None:
        return None
    done = subprocess.run([perf, "stat", "-x,", "-e", "task-clock", "--", "true"],
                          capture_output=True, text=True, check=False)
    try:
        float(done.stderr.strip().splitlines()[-1].split(",")[0])
    except (ValueError, IndexError):
        return None
    return perf if done.returncode == 0 else None


PERF = _perf()


def own_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# ---- the child: one round of calls -----------------------------------------------------------

async def _calls(root: Path, n: int) -> dict[str, float]:
    from tuiapp.settings import config
    from tuiapp.tools.runner import Runner
    from tuiapp.vocab.messages import ToolCall
    from tuiapp.vocab.tool_specs import ToolSpec

    exe = root / "prompts" / "functions" / "sh_tool_0000"
    spec = ToolSpec("sh_tool_0", "t", {"type": "object"}, "keprompt", str(exe),
                    run={"exe": str(exe)})
    runner = Runner(config.parse({"tools": {"builtins": False}}, "bench", root),
                    spool_dir=root / ".spool")

    async def one(i: int) -> float:
        t0 = time.perf_counter()
        fin = await runner.execute(spec, ToolCall(f"c{i}", "sh_tool_0", {"text": "x"}),
                                   lambda e: None)
        assert fin.status == "ok", fin.result
        return time.perf_counter() - t0

    from tuiapp.security.sandbox import starters

    for i in range(3):  # untimed: the probe, the proxy and its namespace start here
        await one(-i - 1)
    for i in range(50):  # and the walls' resident starter (it comes up at the third call)
        if any(s.ready.done() for s in starters.pool.starters.values()):
            break
        await one(-i - 4)
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    own0, handed0 = own_cpu(), starters.pool.handed
    walls_s = [await one(i) for i in range(n)]
    return {"wall": statistics.median(walls_s), "kep_cpu": (own_cpu() - own0) / n,
            "handed": (starters.pool.handed - handed0) / n}


def child(root: Path, n: int) -> None:
    from tuiapp.security.sandbox import spawn

    print("mechanism", spawn.mechanism().name, flush=True)
    print(json.dumps(asyncio.run(_calls(root, n))), flush=True)


# ---- the parent ------------------------------------------------------------------------------

def calls_round(root: Path, env: dict[str, str], n: int, walls: bool) -> dict[str, float]:
    run_env = dict(env) if walls else {**env, "KEP_SANDBOX_MECHANISM": "none"}
    proc = subprocess.Popen([sys.executable, __file__, "--child", str(root), "--calls", str(n)],
                            env=run_env, cwd=root, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    mech = proc.stdout.readline().split()[-1]
    if proc.stdout.readline().strip() != "ready":
        raise SystemExit("the calls did not start")
    perf = None
    if PERF:
        # kep and all it runs already (the starter started in the untimed calls), and what
        # each of them starts from now on
        tree = ",".join(map(str, [proc.pid, *descendants(proc.pid)]))
        perf = subprocess.Popen([PERF, "stat", "-x,", "-e", "task-clock", "-p", tree],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(0.3)  # attached before the first timed call
    proc.stdin.write("go\n")
    proc.stdin.flush()
    out = json.loads(proc.stdout.readline())
    out["mechanism"] = mech  # type: ignore[assignment]
    out["tree_cpu"] = float("nan")
    if perf is not None:
        perf.send_signal(signal.SIGINT)
        err = perf.communicate(timeout=10)[1]
        try:
            out["tree_cpu"] = float(err.strip().splitlines()[-1].split(",")[0]) / 1000 / n
        except (ValueError, IndexError):
            pass
    proc.stdin.close()
    proc.wait(10)
    return out


def descendants(pid: int) -> list[int]:
    """Every live process under `pid`, from /proc's parent links."""
    parent: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    parent[int(entry.name)] = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    out, todo = [], [pid]
    while todo:
        here = todo.pop()
        kids = [p for p, pp in parent.items() if pp == here]
        out += kids
        todo += kids
    return out


def exec_cost(argv: list[str], n: int) -> tuple[float, float]:
    """(median wall, CPU per run) of one command: CPU by perf when there is one."""
    walls = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        walls.append(time.perf_counter() - t0)
    cpu = float("nan")
    if PERF:
        done = subprocess.run([PERF, "stat", "-x,", "-r", str(n), "-e", "task-clock", "--",
                               *argv], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, check=False)
        try:
            cpu = float(done.stderr.strip().splitlines()[-1].split(",")[0]) / 1000
        except (ValueError, IndexError):
            pass
    return statistics.median(walls), cpu


def parts(root: Path, n: int) -> list[tuple[str, float, float]]:
    """A sandboxed start taken apart: a plain exec, bwrap with kep's walls, + nsenter."""
    from tuiapp.security.sandbox import spawn
    from tuiapp.settings import config

    if spawn.mechanism().name != "bubblewrap":
        return []
    spawn.use_config(config.parse({"tools": {"builtins": False}}, "bench", root))
    exe = str(root / "prompts" / "functions" / "sh_tool_0000")
    walls = spawn.prepare([exe], cwd=root, env=None, kind="lister").argv
    nsenter, unshare = shutil.which("nsenter"), shutil.which("unshare")
    rows = [("plain exec of the tool", *exec_cost([exe], n)),
            ("bwrap with kep's walls", *exec_cost(walls, n))]
    if nsenter and unshare:
        holder = subprocess.Popen([unshare, "--user", "--map-root-user", "--net", "sleep", "60"])
        time.sleep(0.2)
        try:
            rows.append(("nsenter into a held namespace", *exec_cost(
                [nsenter, "--user", "--net", "-t", str(holder.pid), "--preserve-credentials",
                 "--", exe], n)))
        finally:
            holder.kill()
            holder.wait()
    return rows


def discovery(root: Path, env: dict[str, str], walls: bool) -> tuple[float, float]:
    cache = Path(env["KEP_CACHE_DIR"])
    for entry in cache.iterdir() if cache.is_dir() else ():
        if entry.name not in ("sandbox-cache", "sandbox-probe-passed"):
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    for snap in Path(env["KEP_STATE_DIR"]).rglob("*snapshot*"):
        snap.unlink()
    run_env = dict(env) if walls else {**env, "KEP_SANDBOX_MECHANISM": "none"}
    run_env["PYTHONPATH"] = str(REPO)  # this tree's kep, whatever the venv has installed
    argv = [sys.executable, "-m", "tuiapp", "functions", "--json", "--project", str(root)]
    if PERF:
        argv = [PERF, "stat", "-x,", "-e", "task-clock", "--", *argv]
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=run_env, cwd=root, capture_output=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode != 0 or done.stdout.count(b'"name"') < 2:
        raise SystemExit(f"discovery failed: {done.stderr.decode()[-2000:]}")
    cpu = float("nan")
    if PERF:
        cpu = float(done.stderr.decode().strip().splitlines()[-1].split(",")[0]) / 1000
    return wall, cpu


def ms(x: float) -> str:
    return "    n/a" if x != x else f"{x * 1000:7.2f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=40, help="timed calls per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=9, help="discovery runs each way")
    ap.add_argument("--tools", type=int, default=100)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(Path(a.child), a.calls)
        return
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
        print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs (figures "
              "under load are not a quiet machine's)")
        print("CPU of what kep starts: " + ("perf stat (follows every descendant)" if PERF else
              "n/a without perf (bwrap's PID namespace hides it from getrusage)"))
        on, off = [], []
        for _ in range(a.rounds):  # alternating rounds, a fresh process each
            off.append(calls_round(root, env, a.calls, False))
            on.append(calls_round(root, env, a.calls, True))
        print(f"per call ({a.calls} x {a.rounds} rounds, mechanism in the round: "
              f"{on[0]['mechanism']}; started by its walls' resident starter: "
              f"{statistics.mean(r['handed'] for r in on):.0%} of the calls)")

        def med(rows: list[dict[str, float]], k: str) -> float:
            vals = [r[k] for r in rows if r[k] == r[k]]
            return statistics.median(vals) if vals else float("nan")

        for label, key in (("wall", "wall"), ("kep CPU", "kep_cpu"),
                           ("children CPU", "children")):
            for r in (*on, *off):
                r["children"] = r["tree_cpu"] - r["kep_cpu"]
            w, o = med(off, key), med(on, key)
            print(f"  {label:13s} without {ms(w)} ms   with {ms(o)} ms   +{ms(o - w).strip()} ms"
                  + ("   (target <= 5 ms)" if key == "wall" else ""))
        rows = parts(root, max(10, a.calls // 2))
        if rows:
            print("one sandboxed start, taken apart (median wall, CPU):")
            for name, w, c in rows:
                print(f"  {name:32s} {ms(w)} ms wall  {ms(c)} ms CPU")
        d_on, d_off = [], []
        discovery(root, env, True)  # untimed: the page cache, the sandbox's private cache
        discovery(root, env, False)
        for i in range(a.reps):  # in pairs, the order turned each time: drift cancels
            for walls in ((False, True) if i % 2 == 0 else (True, False)):
                (d_on if walls else d_off).append(discovery(root, env, walls))
        w_off = statistics.median(w for w, _ in d_off)
        w_on = statistics.median(w for w, _ in d_on)
        c_off = statistics.median(c for _, c in d_off)
        c_on = statistics.median(c for _, c in d_on)
        pairs = sorted(on[0] / off[0] for on, off in zip(d_on, d_off, strict=True))
        print(f"discovery ({a.tools} tools, cold)  without {w_off * 1000:7.1f} ms   with "
              f"{w_on * 1000:7.1f} ms   ratio {w_on / w_off:.3f} (target <= 1.10)")
        print(f"  ratio of each pair        median {statistics.median(pairs):.3f}   "
              f"from {pairs[0]:.3f} to {pairs[-1]:.3f} ({len(pairs)} pairs)")
        if c_off == c_off:
            print(f"  CPU of the process tree   without {c_off * 1000:7.1f} ms   with "
                  f"{c_on * 1000:7.1f} ms   ratio {c_on / c_off:.3f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
