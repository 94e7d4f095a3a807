"""Compile once, before the workers start: kep's modules and the suite's helpers to ordinary
bytecode, the test modules to pytest's assert-rewritten bytecode, on every core.

Without it every xdist worker rewrote all 260 test modules itself (about 9 s of CPU each), and,
where PYTHONDONTWRITEBYTECODE is set (as on CI), every `kep` the tests start compiled the
modules it imports again (about 0.2 s each). Python and pytest both read compiled files that
exist even when told not to write any. A warm-up that fails costs time, nothing else.
"""

from __future__ import annotations

import compileall
import multiprocessing
import os
import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

# Fixture trees are listed and copied by the tests as they are: no __pycache__ in them.
SKIP = re.compile(r"/tests/(fixtures|\.peers)/|/__snapshots__/")
# The run's config, for the rewrites: a pytest Config can't be pickled, so the pool's workers
# are forked and find it here (handing it over as an argument failed, and with it, silently,
# every rewrite: each xdist worker then rewrote all test modules itself).
_CONFIG: pytest.Config | None = None


def _sources(repo: Path) -> list[Path]:
    return [p for top in ("tuiapp", "tests") for p in sorted((repo / top).rglob("*.py"))
            if not SKIP.search(str(p))]


def _compile(paths: list[str]) -> None:
    for path in paths:  # compileall skips a file whose bytecode matches it
        compileall.compile_file(path, quiet=2)


def _rewrite(paths: list[str]) -> None:
    from _pytest.assertion import rewrite

    config = _CONFIG
    for path in paths:
        fn = Path(path)
        try:
            stat, code = rewrite._rewrite_test(fn, config)
            pyc = rewrite.get_cache_dir(fn) / (fn.name[:-3] + rewrite.PYC_TAIL)
            pyc.parent.mkdir(exist_ok=True)
            tmp = pyc.with_name(f"{pyc.name}.{os.getpid()}")
            with open(tmp, "wb") as f:
                rewrite._write_pyc_fp(f, stat, code)
            os.replace(tmp, pyc)
        except (OSError, SyntaxError):
            continue


def _stale_rewrites(tests: list[Path]) -> list[str]:
    from _pytest.assertion import rewrite

    out = []
    for fn in tests:
        pyc = rewrite.get_cache_dir(fn) / (fn.name[:-3] + rewrite.PYC_TAIL)
        if rewrite._read_pyc(fn, pyc) is None:
            out.append(str(fn))
    return out


def warm(repo: Path, config: pytest.Config) -> None:
    global _CONFIG
    _CONFIG = config
    try:
        sources = _sources(repo)
        tests = [p for p in sources if p.name.startswith("test_") or p.name == "conftest.py"]
        rewrites, compiles = _stale_rewrites(tests), [str(p) for p in sources]
    except (OSError, ImportError, AttributeError):
        return
    cores = len(os.sched_getaffinity(0)) or 1
    try:
        with ProcessPoolExecutor(cores, mp_context=multiprocessing.get_context("fork")) as pool:
            jobs = [pool.submit(_rewrite, rewrites[i::cores]) for i in range(cores)]
            jobs += [pool.submit(_compile, compiles[i::cores]) for i in range(cores)]
            for job in jobs:
                job.result()
    except Exception:  # a warm-up only: the workers compile what is missing themselves
        return
