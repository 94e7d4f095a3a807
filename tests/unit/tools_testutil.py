"""Helpers for the registry / runner / built-in tests: configs, tools, and process checks."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from tuiapp.settings import config, config_types

PY = sys.executable  # a direct interpreter path: no pyenv shim, fast to start


def make_config(root: Path, **tools: Any) -> config_types.Config:
    """Config for `root`; built-ins off unless asked for (they cost three interpreter starts)."""
    tools.setdefault("builtins", False)
    return config.parse({"tools": tools}, "test", root)


def sh_tool(path: Path, list_body: str, run_body: str = 'echo "ran $1"') -> Path:
    """A /bin/sh keprompt tool: `list_body` answers --list-functions, `run_body` the rest."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--list-functions" ]; then\n'
        f"{list_body}\n"
        "  exit $?\n"
        "fi\n"
        f"{run_body}\n"
    )
    path.chmod(0o755)
    return path


def one_def(name: str, params: str = '{"type": "object", "properties": {}}') -> str:
    """A shell line printing a one-function definition array (`params`: its JSON schema)."""
    return (
        f'  echo \'[{{"name": "{name}", "description": "{name} tool", "parameters": {params}}}]\''
    )


def pid_alive(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.02)
    return not pid_alive(pid)


def read_pid(path: Path, within: float = 3.0) -> int:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        text = path.read_text().strip() if path.exists() else ""
        if text:
            return int(text)
        time.sleep(0.01)
    raise AssertionError(f"{path} never got a pid")
