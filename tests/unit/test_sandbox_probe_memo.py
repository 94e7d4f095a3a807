"""The mechanism's probe (a whole bwrap run) is remembered when it passed, and only then, and
only while what it depended on holds (security/sandbox/probe_memo.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tuiapp.security.sandbox import probe_memo, spawn
from tuiapp.security.sandbox.bubblewrap import Bubblewrap

pytestmark = pytest.mark.skipif(
    spawn.mechanism().missing() is not None, reason="no bubblewrap here")


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The probes that really ran."""
    seen: list[list[str]] = []
    real = subprocess.run

    def recording(argv: list[str], *a: object, **k: object) -> object:
        seen.append(list(argv))
        return real(argv, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(spawn.subprocess, "run", recording)
    return seen


def test_a_passed_probe_is_not_run_again(runs: list[list[str]]) -> None:
    assert spawn._probe(Bubblewrap()) is None
    assert spawn._probe(Bubblewrap()) is None
    assert len(runs) == 1


def test_a_failed_probe_is_never_remembered(runs: list[list[str]],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Bubblewrap, "probe_argv", lambda self: ["/bin/false"])
    assert spawn._probe(Bubblewrap()) is not None
    assert spawn._probe(Bubblewrap()) is not None
    assert len(runs) == 2


def test_what_it_depended_on_changing_asks_again(runs: list[list[str]], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setattr(Bubblewrap, "probe_argv", lambda self: [str(fake)])
    assert spawn._probe(Bubblewrap()) is None
    fake.write_text("#!/bin/sh\nexit 0\n# another build\n")  # the program replaced
    assert spawn._probe(Bubblewrap()) is None
    monkeypatch.setattr(os, "uname", lambda: os.uname_result(("Linux", "h", "9.9.9", "", "")))
    assert spawn._probe(Bubblewrap()) is None  # another kernel
    assert len(runs) == 3


def test_a_hostile_memo_file_is_just_a_miss(runs: list[list[str]]) -> None:
    memo = Path(os.environ["KEP_CACHE_DIR"]) / "sandbox-probe-passed"
    memo.parent.mkdir(parents=True, exist_ok=True)
    memo.write_bytes(b"\xff\xfe" * 100_000 + b"\n\t\x1b[2J")
    assert spawn._probe(Bubblewrap()) is None
    assert len(runs) == 1
    assert probe_memo.passed(probe_memo.key(Bubblewrap().probe_argv() or []))
