"""The tool names each MCP server listed last time, remembered in the user cache dir, so a
headless run can tell that its prompt names a tool of a server that is still starting (and
wait for that server) before the server has listed anything in this run."""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path

from tuiapp.settings import paths


def _file(server: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in server)
    return paths.cache_dir() / "mcp-tools" / f"{safe}.json"


def remember(server: str, names: Iterable[str]) -> None:
    target = _file(server)
    data = sorted(set(names))
    with contextlib.suppress(OSError, ValueError):
        if target.is_file() and json.loads(target.read_text("utf-8")) == data:
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tools-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.replace(tmp, target)


def known(server: str) -> list[str]:
    try:
        data = json.loads(_file(server).read_text("utf-8"))
    except (OSError, ValueError):
        return []
    return [n for n in data if isinstance(n, str)] if isinstance(data, list) else []


def named_in(text: str, server: str) -> bool:
    """Does `text` name the server or one of the tools it listed last time (as a word)?"""
    words = set(re.findall(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", text.lower()))
    names = {server.lower(), *(n.lower() for n in known(server))}
    return bool(words & names) or any(w.startswith(server.lower() + "_") for w in words)
