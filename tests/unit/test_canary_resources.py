"""The canary harness, resource payloads: a checkout whose files would exhaust kep if read
naively (a `/dev/zero` link, a FIFO, nesting 100,000 deep, a 10 MB description) through the
headless commands, untrusted (read before any trust question) and trusted (`--trust`).

Each command runs with its address space capped at 1 GiB: a read until memory runs out ends
in a MemoryError traceback, which fails the test. It passes when every command ends in
bounded time, with no traceback, and says what is wrong in at most a few lines.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import KEP, kep_env

LIMIT = 1 << 30  # bytes of address space per command


def _link_zero(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink("/dev/zero", path)


def _fifo(path: Path) -> None:
    os.mkfifo(path)


BIG_LISTER = """#!/bin/sh
if [ "$1" = "--list-functions" ]; then
  python3 -c 'import json; print(json.dumps([{"name": "big", "description": "d" * 10_000_000,
      "parameters": {"type": "object", "properties": {}}}]))'
fi
"""


def _big_tool(root: Path) -> None:
    tool = root / "prompts" / "functions" / "big"
    tool.write_text(BIG_LISTER)
    tool.chmod(0o755)


CASES: dict[str, Callable[[Path], None]] = {
    "kep.toml -> /dev/zero": lambda r: _link_zero(r / "kep.toml"),
    "mcp.json -> /dev/zero": lambda r: _link_zero(r / "mcp.json"),
    "Loki config.yaml -> /dev/zero": lambda r: _link_zero(r / "functions" / "config.yaml"),
    ".env -> /dev/zero": lambda r: _link_zero(r / ".env"),
    "kep.toml a FIFO": lambda r: _fifo(r / "kep.toml"),
    "kep.toml 3,000 deep": lambda r: (r / "kep.toml").write_text(
        "a = " + "[" * 3000 + "]" * 3000 + "\n"),
    "mcp.json 100,000 deep": lambda r: (r / "mcp.json").write_text(
        '{"mcpServers": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    "a 10 MB tool description": _big_tool,
}
COMMANDS = {
    "functions": ["functions"],
    "functions --trust": ["functions", "--trust"],
    "functions --check": ["functions", "--check", "--trust"],
    "run": ["run", "hello"],
    "trust": ["trust", "."],
}


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _run(root: Path, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KEP, *argv, "--project", str(root)] if argv[0] != "trust"
                          else [*KEP, *argv], cwd=root, env=env, capture_output=True,
                          text=True, timeout=180, stdin=subprocess.DEVNULL,
                          preexec_fn=_capped)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_file_is_one_clear_line_in_every_command(
        case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KEP_STATE_DIR", str(tmp_path / "fresh-state"))  # nothing trusted
    root = tmp_path / "checkout"
    (root / "prompts" / "functions").mkdir(parents=True)
    CASES[case](root)
    env = kep_env(KEP_STATE_DIR=str(tmp_path / "fresh-state"))
    with ThreadPoolExecutor(max_workers=len(COMMANDS)) as pool:  # side by side
        runs = dict(zip(COMMANDS, pool.map(lambda a: _run(root, a, env), COMMANDS.values()),
                        strict=True))
    for name, res in runs.items():
        where = f"{case}: kep {name}"
        assert "Traceback" not in res.stderr, f"{where}\n{res.stderr[-3000:]}"
        assert "MemoryError" not in res.stderr and "RecursionError" not in res.stderr, where
        assert res.returncode in (0, 1, 2), f"{where}: exit {res.returncode}\n{res.stderr}"
        assert len(res.stderr.splitlines()) <= 8, f"{where}: too much said\n{res.stderr}"
        json.dumps(res.stdout)  # (printable: it came back as text)
