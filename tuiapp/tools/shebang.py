"""A script's #! line, and what a failed start means in one line.

Apart from proc.py (which imports asyncio) so that the formats can read shebangs on the warm
path, where no process is started.
"""

from __future__ import annotations

import errno
from pathlib import Path


def read_shebang(path: Path, *, as_kernel: bool = False) -> str | None:
    """The #! line of a file without its #!, or None. `as_kernel`: trim only spaces and tabs,
    as the kernel does (so a CRLF line keeps its \r and fails there too)."""
    from tuiapp.security import project_files  # a FIFO named like a tool must not block

    try:
        head = (project_files.read_bytes(path, 255, head=True) or b"")[:256]
    except project_files.ProjectFileError:
        return None
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", errors="replace")
    return line.strip(" \t") if as_kernel else line.strip()


def spawn_error(path: Path, e: OSError) -> str:
    shebang = read_shebang(path)
    if e.errno == errno.ENOEXEC:
        return "no shebang: the first line must name an interpreter, e.g. #!/usr/bin/env python3"
    if e.errno == errno.ENOENT and shebang is not None:
        interp = shebang.split()[0] if shebang.split() else "(empty)"
        return f"bad shebang: interpreter {interp} not found (#!{shebang})"
    if e.errno == errno.EACCES:
        return "not executable: permission denied (check chmod +x and the mount's noexec flag)"
    return f"cannot run: {e.strerror or e}"
