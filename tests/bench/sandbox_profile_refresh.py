#!/usr/bin/env python3
"""What keeping the profile true between calls costs kep per call: the `.env` index's
refresh (one stat per folder searched) and the writable entries' link check, on a project of
20,000 files. Baseline, in the same run: the kept profile with neither (the code before).
For scale: one walk of the project (what refreshing by walking at every call would cost).

    .venv/bin/python tests/bench/sandbox_profile_refresh.py [--files 20000] [--per-dir 10]
                                                            [--calls 2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tuiapp.security.sandbox import dotenv_index, profile, spawn
from tuiapp.settings.config_types import SandboxConfig


def make_project(root: Path, files: int, per_dir: int) -> int:
    """`files` files, `per_dir` to a folder, folders nested up to 4 deep: returns folders."""
    dirs = 0
    for i in range(files // per_dir):
        d = root / f"a{i % 10}" / f"b{i // 10 % 10}" / f"c{i // 100 % 10}" / f"d{i // 1000}"
        d.mkdir(parents=True, exist_ok=True)
        for j in range(per_dir):
            (d / f"f{j}.py").write_text("x = 1\n")
        dirs += 1
    (root / "prompts" / "functions").mkdir(parents=True)
    return dirs


def per_call(calls: int) -> float:
    """Median µs of profile_for() over `calls` calls, in 20 batches."""
    batch = max(1, calls // 20)
    times = []
    for _ in range(20):
        t = time.perf_counter()
        for _ in range(batch):
            spawn.profile_for(spawn._state.root, tool="t")
        times.append((time.perf_counter() - t) / batch * 1e6)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--per-dir", type=int, default=10)
    ap.add_argument("--calls", type=int, default=2000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("KEP_BENCH_DIR", "/var/tmp")) as tmp:
        root = Path(tmp)
        dirs = make_project(root, a.files, a.per_dir)
        spawn.configure(SandboxConfig(writable=["build", "out/data", "~/.local/share/x"]), root)
        spawn.profile_for(root, tool="t")  # the first call: the walk, and the profile kept
        searched = len(spawn._state.dotenvs.folders) if spawn._state.dotenvs else 0
        now = per_call(a.calls)
        # The code before: the kept profile, no refresh, no link check.
        refresh, check = dotenv_index.DotenvIndex.refresh, spawn.writable_check.bindable
        dotenv_index.DotenvIndex.refresh = lambda self: False  # type: ignore[method-assign]
        spawn.writable_check.bindable = lambda prof, said, notice: prof  # type: ignore
        base = per_call(a.calls)
        dotenv_index.DotenvIndex.refresh = refresh  # type: ignore[method-assign]
        spawn.writable_check.bindable = check
        t = time.perf_counter()
        for _ in range(5):
            profile.dotenv_files(root)
        walk = (time.perf_counter() - t) / 5 * 1e6
    print(f"project: {a.files} files in {dirs} folders; .env search looks in {searched} "
          f"folders (cap {profile.DOTENV_DIRS}, depth {profile.DOTENV_DEPTH})")
    print(f"profile_for per call: {now:.0f} µs now, {base:.0f} µs baseline (kept profile "
          f"only): +{now - base:.0f} µs ({now / max(base, 0.01):.1f}x)")
    print(f"one walk of the project, for scale: {walk:.0f} µs")


if __name__ == "__main__":
    main()
