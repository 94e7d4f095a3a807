#!/usr/bin/env python3
"""Discovery benchmark: kep vs keprompt 3.1.0 on the same tool executables, in one run.

    .venv/bin/python tests/bench/discovery.py [--reps 5] [--keprompt-reps 3]
                                              [--keprompt-venv DIR] [--no-scale]

The corpus: prompts/functions/ with 100 `#!/usr/bin/env python3` scripts and 100 `#!/bin/sh`
scripts. Like with like: `python3` on PATH is a link to the very interpreter that runs kep
(no pyenv shim or other wrapper in front of it), keprompt is installed from PyPI into a
throwaway venv made with that same interpreter (unless --keprompt-venv names one to reuse),
both write bytecode to the same PYTHONPYCACHEPREFIX, and each runs once untimed first.

Timed, each a whole process, kep and keprompt alternating (medians):
  keprompt   `keprompt functions get --json` in the project (it lists every tool, one after
             the other, on every command, even `--version`)
  kep cold   `kep functions --json` with an empty declaration cache
  kep warm   the same with the cache filled (unchanged tree: no tool process; from the
             second warm run on, answered from the last listing's snapshot)
Then: kep's own CPU per tool beyond spawning it (kep's process alone, cold 200 tools minus an
empty project, over 200); the fork server (100 python tools, cold, with and without it, minus
an empty project); scale (1,000 tools cold and warm); `kep --version`.
Targets (issue 16): cold <= 0.15x keprompt, warm <= 0.03x keprompt and <= 100 ms, own CPU
<= 1 ms per tool, python tools via the fork server <= 25% of their cost without it, 1,000 tools
cold <= 5.5x 200 tools and warm <= 150 ms, `kep --version` <= 50 ms.
CPU seconds are user+sys of the whole process tree (os.wait4): less noisy than wall time on a
busy machine. The load average is printed: figures taken under load are not a quiet machine's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KEP = [sys.executable, "-m", "tuiapp"]
# kep's own CPU (its process, not its children), written to a pipe as it exits.
SELF_CPU = (
    "import os, resource, sys\n"
    "sys.argv = ['kep', *sys.argv[1:]]\n"
    "from tuiapp.cli import main\n"
    "try:\n    code = main()\nfinally:\n"
    "    r = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    os.write(int(os.environ['BENCH_CPU_FD']), f'{r.ru_utime + r.ru_stime}'.encode())\n"
    "sys.exit(code)\n"
)

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

SH_TOOL = """#!/bin/sh
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


def make_project(root: Path, n_py: int, n_sh: int) -> Path:
    fn = root / "prompts" / "functions"
    fn.mkdir(parents=True)
    for i in range(n_py):
        (fn / f"py_tool_{i:04d}").write_text(PY_TOOL.format(i=i))
    for i in range(n_sh):
        (fn / f"sh_tool_{i:04d}").write_text(SH_TOOL.format(i=i))
    for f in fn.iterdir():
        f.chmod(0o755)
    # Built-ins off: the comparison is the same files for both programs.
    (root / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    return root


class Sample:
    def __init__(self, wall: float, cpu: float, own: float, out: str) -> None:
        self.wall, self.cpu, self.own, self.out = wall, cpu, own, out


def timed(argv: list[str], *, cwd: Path, env: dict[str, str]) -> Sample:
    """Wall seconds, CPU of the whole process tree, CPU of the process itself, stdout."""
    r, w = os.pipe()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env={**env, "BENCH_CPU_FD": str(w)},
                                stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, pass_fds=(w,))
        os.close(w)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        own_text = os.read(r, 64).decode() or "nan"
        os.close(r)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{argv} failed ({proc.returncode}):\n{err.read()[-2000:]!r}")
        return Sample(wall, usage.ru_utime + usage.ru_stime, float(own_text),
                      out.read().decode())


def med(samples: list[Sample], attr: str) -> float:
    return statistics.median(getattr(s, attr) for s in samples)


def real_python() -> str:
    """The interpreter behind sys.executable (a venv's python is a link to it)."""
    base = getattr(sys, "_base_executable", sys.executable)
    return os.path.realpath(base)


def install_keprompt(venv: Path) -> Path:
    exe = venv / "bin" / "keprompt"
    if exe.exists():
        return exe
    print(f"installing keprompt==3.1.0 into {venv} …", flush=True)
    subprocess.run([real_python(), "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "keprompt==3.1.0"], check=True)
    return exe


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5, help="runs per kep measurement (default 5)")
    ap.add_argument("--keprompt-reps", type=int, default=3, help="keprompt runs (default 3)")
    ap.add_argument("--keprompt-venv", type=Path, help="reuse (or create) this venv")
    ap.add_argument("--no-scale", action="store_true", help="skip the 1,000-tool runs")
    opts = ap.parse_args()
    reps = max(1, opts.reps)

    with tempfile.TemporaryDirectory(prefix="kep-bench-") as tmp_s:
        tmp = Path(tmp_s)
        main_proj = make_project(tmp / "p200", 100, 100)
        py_proj = make_project(tmp / "p100py", 100, 0)
        empty = make_project(tmp / "p0", 0, 0)
        big = None if opts.no_scale else make_project(tmp / "p1000", 500, 500)
        keprompt = install_keprompt(opts.keprompt_venv or tmp / "keprompt-venv")
        bindir = tmp / "bin"
        bindir.mkdir()
        (bindir / "python3").symlink_to(real_python())
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("KEP_", "PYTHONDONTWRITEBYTECODE", "PYTHONPATH"))}
        env.update(
            PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}",
            HOME=str(tmp / "home"),
            KEP_CONFIG_DIR=str(tmp / "kep-config"),
            KEP_DATA_DIR=str(tmp / "kep-data"),
            KEP_STATE_DIR=str(tmp / "kep-state"),
            PYTHONPYCACHEPREFIX=str(tmp / "pycache"),
        )
        (tmp / "home").mkdir()
        # The projects are the user's own: trusted (else kep would list only its built-ins).
        subprocess.run([*KEP, "trust", str(tmp)], env=env, capture_output=True, check=True)
        runs = 0

        def kep(project: Path, cache: str | None = None, **extra: str) -> Sample:
            nonlocal runs
            runs += 1
            cache_dir = tmp / (cache or f"cache-cold-{runs}")
            return timed([sys.executable, "-c", SELF_CPU, "functions", "--json", "--project",
                          str(project)], cwd=project,
                         env={**env, "KEP_CACHE_DIR": str(cache_dir), **extra})

        def kp() -> Sample:
            return timed([str(keprompt), "functions", "get", "--json"], cwd=main_proj, env=env)

        def ok_count(s: Sample) -> int:
            return sum(1 for e in json.loads(s.out) if e["status"] == "ok")

        # Warm-ups: bytecode compiled for both, page cache filled. Counts checked.
        assert ok_count(kep(main_proj)) == 200
        assert len(json.loads(kp().out)["data"]) == 200
        kep(main_proj, "cache-warm")

        cold: list[Sample] = []
        warm: list[Sample] = []
        kps: list[Sample] = []
        for i in range(max(reps, opts.keprompt_reps)):  # alternating
            if i < reps:
                cold.append(kep(main_proj))
                assert ok_count(cold[-1]) == 200
                warm.append(kep(main_proj, "cache-warm"))
            if i < opts.keprompt_reps:
                kps.append(kp())
        zero = [kep(empty) for _ in range(reps)]
        fs_on: list[Sample] = []
        fs_off: list[Sample] = []
        for _ in range(max(2, reps // 2)):
            fs_on.append(kep(py_proj))
            fs_off.append(kep(py_proj, KEP_FORKSERVER="0"))
            assert ok_count(fs_on[-1]) == ok_count(fs_off[-1]) == 100
        big_cold: list[Sample] = []
        big_warm: list[Sample] = []
        if big is not None:
            kep(big, "cache-big")
            for _ in range(max(2, reps // 2)):
                big_cold.append(kep(big))
                assert ok_count(big_cold[-1]) == 1000
                big_warm.append(kep(big, "cache-big"))
        version = []
        for _ in range(reps):
            t0 = time.perf_counter()
            subprocess.run([*KEP, "--version"], env=env, capture_output=True, check=True)
            version.append(time.perf_counter() - t0)
        shutil.rmtree(tmp / "pycache", ignore_errors=True)

    report(cold, warm, kps, zero, fs_on, fs_off, big_cold, big_warm, version, reps,
           opts.keprompt_reps)
    return 0


def report(cold: list[Sample], warm: list[Sample], kps: list[Sample], zero: list[Sample],
           fs_on: list[Sample], fs_off: list[Sample], big_cold: list[Sample],
           big_warm: list[Sample], version: list[float], reps: int, kreps: int) -> None:
    w: Callable[[list[Sample]], float] = lambda s: med(s, "wall")  # noqa: E731
    c: Callable[[list[Sample]], float] = lambda s: med(s, "cpu")  # noqa: E731
    kp_w, kp_c = w(kps), c(kps)
    print(f"\n100 python + 100 sh tools; medians of {reps} kep and {kreps} keprompt runs, "
          f"alternating; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'':22}{'wall s':>9}{'cpu s':>9}{'wall ratio':>12}{'cpu ratio':>11}  target")

    def row(name: str, s: list[Sample], target: str = "", ok: bool | None = None) -> None:
        verdict = "" if ok is None else ("OK" if ok else "MISSED")
        print(f"{name:22}{w(s):9.3f}{c(s):9.3f}{w(s) / kp_w:12.3f}{c(s) / kp_c:11.3f}"
              f"  {target} {verdict}")

    print(f"{'keprompt 3.1.0':22}{kp_w:9.3f}{kp_c:9.3f}")
    row("kep cold", cold, "<= 0.15x", w(cold) / kp_w <= 0.15)
    row("kep warm", warm, "<= 0.03x and <= 0.100 s",
        w(warm) / kp_w <= 0.03 and w(warm) <= 0.100)
    own = (med(cold, "own") - med(zero, "own")) / 200
    print(f"kep's own CPU per tool beyond spawning it: {own * 1000:.2f} ms "
          f"(cold {med(cold, 'own'):.3f} s, empty project {med(zero, 'own'):.3f} s)  "
          f"<= 1 ms {'OK' if own <= 0.001 else 'MISSED'}")
    on_w, off_w = w(fs_on) - w(zero), w(fs_off) - w(zero)
    on_c, off_c = c(fs_on) - c(zero), c(fs_off) - c(zero)
    print(f"100 python tools, cost beyond an empty project: fork server {on_w:.3f} s wall "
          f"{on_c:.3f} s cpu; without (KEP_FORKSERVER=0) {off_w:.3f} s wall {off_c:.3f} s cpu; "
          f"ratio {on_w / off_w:.3f} wall {on_c / off_c:.3f} cpu  <= 0.25 "
          f"{'OK' if on_w / off_w <= 0.25 else 'MISSED'}")
    if big_cold:
        ratio = w(big_cold) / w(cold)
        print(f"1,000 tools: cold {w(big_cold):.3f} s wall {c(big_cold):.3f} s cpu "
              f"({ratio:.2f}x 200 tools, <= 5.5x {'OK' if ratio <= 5.5 else 'MISSED'}); "
              f"warm {w(big_warm):.3f} s wall {c(big_warm):.3f} s cpu "
              f"(<= 0.150 s {'OK' if w(big_warm) <= 0.150 else 'MISSED'})")
    v = statistics.median(version)
    print(f"kep --version: {v:.3f} s wall  <= 0.050 s {'OK' if v <= 0.050 else 'MISSED'}")


if __name__ == "__main__":
    sys.exit(main())
