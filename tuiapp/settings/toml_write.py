"""Writing kep's TOML files (a theme choice, an "always" rule): readable and safe.

- Approval rules come out as the README shows them, one `[[approval.rules]]` table each
  (tomli_w alone would write them as one inline array).
- The write is atomic (a temp file beside the target, then a rename), keeps the file's mode,
  and goes through a symlink to the file it points to, so a kep.toml kept in a dotfiles repo
  stays a link.
"""

from __future__ import annotations

import os
import tempfile
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class LinkError(OSError):
    """The file is a symlink whose target does not exist: kep does not create it."""


def dumps(data: Mapping[str, Any]) -> str:
    import tomli_w  # only writers need it (not on the way to the first frame)

    approval = data.get("approval")
    rules = approval.get("rules") if isinstance(approval, Mapping) else None
    if not rules or not all(_flat(r) for r in rules):
        return tomli_w.dumps(dict(data))
    rest = dict(data)
    rest_approval = {k: v for k, v in approval.items() if k != "rules"}  # type: ignore[union-attr]
    if rest_approval:
        rest["approval"] = rest_approval
    else:
        del rest["approval"]
    parts = [tomli_w.dumps(rest).rstrip("\n")] if rest else []
    for rule in rules:
        parts.append("[[approval.rules]]\n" + tomli_w.dumps(rule).rstrip("\n"))
    text = "\n\n".join(p for p in parts if p) + "\n"
    if tomllib.loads(text) != tomllib.loads(tomli_w.dumps(dict(data))):
        return tomli_w.dumps(dict(data))  # a shape this layout cannot hold: plain and right
    return text


def _umask() -> int:
    """The process umask, read without setting it (os.umask would, for every thread)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def _flat(rule: Any) -> bool:
    return isinstance(rule, Mapping) and all(
        isinstance(v, str | int | float | bool) for v in rule.values())


def write_atomic(path: Path, text: str) -> Path:
    """Replace the file `path` leads to with `text`; returns the file written."""
    target = Path(os.path.realpath(path))
    if path.is_symlink() and not target.exists():
        raise LinkError(f"{path} is a symlink to {target}, which does not exist")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode())
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
