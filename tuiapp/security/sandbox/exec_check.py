"""What exec would say of a command before the walls are built: inside them a missing program
or interpreter would fail in the mechanism's own exec, as a run that printed an error, not as
the OSError kep reports for a command that cannot start."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path


def programs(argv: Sequence[str], env: Mapping[str, str] | None,
              cwd: Path | str | None) -> list[Path]:
    """Raise what exec would for a command that cannot start (ENOENT, EACCES, ENOEXEC): inside
    the walls it would fail in the mechanism's own exec, as a run that printed an error.
    Returns the program and its `#!` interpreter, which the child must be able to see."""
    if cwd is not None and not os.path.isdir(cwd):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(cwd))
    if not argv:
        raise FileNotFoundError(errno.ENOENT, "no command")
    name = argv[0]
    if "/" in name:
        path = name if os.path.isabs(name) or cwd is None else os.path.join(cwd, name)
    else:
        found = shutil.which(name, path=(env or os.environ).get("PATH", os.defpath))
        if found is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)
        path = found
    if not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), name)
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError as e:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), name) from e
    if head.startswith(b"\x7fELF"):
        return [Path(path)]
    if not head.startswith(b"#!"):
        raise OSError(errno.ENOEXEC, os.strerror(errno.ENOEXEC), name)
    interp = head[2:].split(b"\n", 1)[0].strip().split()
    if not interp or not os.path.exists(interp[0]):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)
    return [Path(path), Path(os.fsdecode(interp[0]))]
