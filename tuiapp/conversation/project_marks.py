"""Small per-project facts kep remembers between runs: the welcome panel was dismissed, the
session that was open last. One file per (kind, project) under the data dir, written
atomically, so two keps never see half a value."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from tuiapp.settings import paths

MAX_VALUE = 4096  # a mark is a word or an id; anything longer is not ours


def _file(kind: str, root: Path) -> Path:
    digest = hashlib.sha256(str(root.resolve()).encode("utf-8", "surrogateescape")).hexdigest()
    return paths.data_dir() / "marks" / kind / digest[:32]


def get(kind: str, root: Path) -> str | None:
    try:
        with _file(kind, root).open("rb") as f:
            data = f.read(MAX_VALUE + 1)
    except OSError:
        return None
    if len(data) > MAX_VALUE:
        return None
    text = data.decode("utf-8", "replace")
    _path, _, value = text.partition("\n")
    return value


def put(kind: str, root: Path, value: str = "") -> None:
    """Record `value` for this project; failures are ignored (a mark is a convenience)."""
    target = _file(kind, root)
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".mark-")
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(f"{root.resolve()}\n{value}")  # the path first: readable by a person
        os.replace(tmp, target)
    except OSError:
        pass
