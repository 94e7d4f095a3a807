"""The suite's warm-up (tests/bytecode_warmup.py) really leaves its work done: every test
module assert-rewritten as pytest would load it, kep's modules compiled. It failed silently
once (a Config handed to another process can't be pickled), and each parallel worker then
rewrote every test module itself, some 30 s of CPU a run."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import pytest
from bytecode_warmup import _stale_rewrites, warm


def test_the_warmup_rewrites_every_test_module_and_compiles_the_package(
        tmp_path: Path, pytestconfig: pytest.Config) -> None:
    repo = tmp_path / "repo"
    (repo / "tests" / "unit").mkdir(parents=True)
    (repo / "tuiapp").mkdir()
    tests = []
    for i in range(5):
        test = repo / "tests" / "unit" / f"test_w{i}.py"
        test.write_text(f"def test_x() -> None:\n    assert {i} == {i}\n")
        tests.append(test)
    (repo / "tests" / "conftest.py").write_text("X = 1\n")
    module = repo / "tuiapp" / "m.py"
    module.write_text("X = 1\n")
    assert len(_stale_rewrites(tests)) == 5
    with warnings.catch_warnings():  # Python 3.12+: forking a process with threads
        warnings.simplefilter("ignore", DeprecationWarning)
        warm(repo, pytestconfig)
    assert _stale_rewrites([*tests, repo / "tests" / "conftest.py"]) == []
    assert Path(importlib.util.cache_from_source(str(module))).is_file()
