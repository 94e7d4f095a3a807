#!/usr/bin/env python3
"""Discovery benchmark: kep vs keprompt 3.1.0 on 200 tool executables.

    .venv/bin/python tests/bench/discovery.py [--reps N] [--keprompt-venv DIR]

Generates a project with 100 `#!/usr/bin/env python3` tools and 100 bash tools, then times,
as subprocess wall time (median of several runs):
  kep cold   `kep functions --json --project DIR` with an empty declaration cache
  kep warm   the same with the cache filled (unchanged tree: no tool process at all)
  keprompt   `keprompt functions get --json` in DIR (keprompt 3.1.0 lists prompts/functions/
             relative to the cwd, sequentially, on every command), installed from PyPI into a
             throwaway venv unless --keprompt-venv names one.
Targets: cold <= 0.25x keprompt, warm <= 0.05x keprompt. CPU seconds (user+sys of the process
tree) are printed too: wall time on a busy machine is noisy, CPU time less so.
Both tools run with the same environment and compiled bytecode (a warm-up run each first).
"""

from __future__ import annotations

import argparse
import json
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
KEP = [sys.executable, "-m", "tuiapp"]
N_PY, N_SH = 100, 100

PY_TOOL = """#!/usr/bin/env python3
import json
import sys

DEFS = [{{"name": "py_tool_{i}", "description": "Python tool number {i}",
          "parameters": {{"type": "object", "properties": {{"text": {{"type": "string"}}}},
                          "required": ["text"], "additionalProperties": False}}}}]


def main():
    if sys.argv[1:] == ["--list-functions"]:
        print(json.dumps(DEFS))
    elif sys.argv[1:] == ["--version"]:
        print("1.0")
    else:
        args = json.loads(sys.stdin.read() or "{{}}")
        print("py_tool_{i}:", args.get("text", ""))


if __name__ == "__main__":
    main()
"""

SH_TOOL = """#!/bin/bash
case "$1" in
  --list-functions)
    cat <<'EOF'
[{{"name": "sh_tool_{i}", "description": "Shell tool number {i}",
  "parameters": {{"type": "object", "properties": {{"text": {{"type": "string"}}}},
                  "required": ["text"], "additionalProperties": false}}}}]
EOF
    ;;
  --version) echo 1.0 ;;
  *) read -r args; echo "sh_tool_{i}: $args" ;;
esac
"""


def make_project(root: Path) -> None:
    fn = root / "prompts" / "functions"
    fn.mkdir(parents=True)
    for i in range(N_PY):
        (fn / f"py_tool_{i:03d}").write_text(PY_TOOL.format(i=i))
    for i in range(N_SH):
        (fn / f"sh_tool_{i:03d}").write_text(SH_TOOL.format(i=i))
    for f in fn.iterdir():
        f.chmod(0o755)
    # Built-ins off: the comparison is the same 200 files for both tools.
    (root / "kep.toml").write_text("[tools]\nbuiltins = false\n")


def timed(argv: list[str], *, cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds of the whole child tree, stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{argv} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out.stdout


def kep_count(stdout: str) -> int:
    return sum(1 for e in json.loads(stdout) if e["status"] == "ok")


def keprompt_count(stdout: str) -> int:
    return len(json.loads(stdout)["data"])


def install_keprompt(venv: Path) -> Path:
    exe = venv / "bin" / "keprompt"
    if exe.exists():
        return exe
    print(f"installing keprompt==3.1.0 into {venv} …", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "keprompt==3.1.0"], check=True)
    return exe


def median_of(samples: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--reps", type=int, default=5, help="runs per kep measurement (default 5)")
    ap.add_argument("--keprompt-reps", type=int, default=3, help="keprompt runs (default 3)")
    ap.add_argument("--keprompt-venv", type=Path, help="reuse (or create) this venv")
    opts = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="kep-bench-") as tmp_s:
        tmp = Path(tmp_s)
        project = tmp / "project"
        make_project(project)
        keprompt = install_keprompt(opts.keprompt_venv or tmp / "keprompt-venv")
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("KEP_", "PYTHONDONTWRITEBYTECODE"))
        }
        env.update(
            HOME=str(tmp / "home"),
            KEP_CONFIG_DIR=str(tmp / "kep-config"),
            KEP_DATA_DIR=str(tmp / "kep-data"),
            PYTHONPYCACHEPREFIX=str(tmp / "pycache"),
        )
        (tmp / "home").mkdir()

        def kep_run(cache: Path, **extra: str) -> tuple[float, float, str]:
            return timed(
                [*KEP, "functions", "--json", "--project", str(project)],
                cwd=project,
                env={**env, "KEP_CACHE_DIR": str(cache), **extra},
            )

        # Warm-ups (bytecode compiled, page cache filled), not counted.
        kep_run(tmp / "cache-warmup")
        _, _, out = timed([str(keprompt), "functions", "get", "--json"], cwd=project, env=env)
        assert keprompt_count(out) == N_PY + N_SH, keprompt_count(out)

        cold = []
        for i in range(opts.reps):
            wall, cpu, out = kep_run(tmp / f"cache-cold-{i}")
            assert kep_count(out) == N_PY + N_SH, kep_count(out)
            cold.append((wall, cpu))
        plain = []  # for the record: cold without the Python fork server
        for i in range(min(opts.reps, 2)):
            wall, cpu, out = kep_run(tmp / f"cache-plain-{i}", KEP_FORKSERVER="0")
            assert kep_count(out) == N_PY + N_SH
            plain.append((wall, cpu))
        warm_cache = tmp / "cache-warm"
        kep_run(warm_cache)
        warm = []
        for _ in range(opts.reps):
            wall, cpu, out = kep_run(warm_cache)
            assert kep_count(out) == N_PY + N_SH
            warm.append((wall, cpu))
        kp = []
        for _ in range(opts.keprompt_reps):
            wall, cpu, out = timed(
                [str(keprompt), "functions", "get", "--json"], cwd=project, env=env
            )
            assert keprompt_count(out) == N_PY + N_SH
            kp.append((wall, cpu))
        shutil.rmtree(tmp / "pycache", ignore_errors=True)

    (kc_w, kc_c), (kw_w, kw_c), (kp_w, kp_c) = median_of(cold), median_of(warm), median_of(kp)
    pl_w, pl_c = median_of(plain)
    print(
        f"\n{N_PY} python + {N_SH} bash tools; medians of {opts.reps} kep runs, "
        f"{opts.keprompt_reps} keprompt runs; load average {os.getloadavg()[0]:.1f}"
    )
    print(f"{'':14}{'wall s':>9}{'cpu s':>9}{'wall ratio':>12}{'cpu ratio':>11}  target")
    print(f"{'keprompt 3.1':14}{kp_w:9.3f}{kp_c:9.3f}")
    print(
        f"{'kep cold':14}{kc_w:9.3f}{kc_c:9.3f}{kc_w / kp_w:12.3f}{kc_c / kp_c:11.3f}  <= 0.25"
        f"  {'OK' if kc_w / kp_w <= 0.25 else 'MISSED'}"
    )
    print(
        f"{'  no forksrv':14}{pl_w:9.3f}{pl_c:9.3f}{pl_w / kp_w:12.3f}{pl_c / kp_c:11.3f}"
        "  (cold with KEP_FORKSERVER=0, for comparison)"
    )
    print(
        f"{'kep warm':14}{kw_w:9.3f}{kw_c:9.3f}{kw_w / kp_w:12.3f}{kw_c / kp_c:11.3f}  <= 0.05"
        f"  {'OK' if kw_w / kp_w <= 0.05 else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
