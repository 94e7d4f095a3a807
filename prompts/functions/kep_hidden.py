"""Hidden files for kep's built-in functions: never read, written or searched, whatever else
allows. Stdlib only; imported by kep_builtins.py (not a tool: no #! line, no exec bit).

The list is kep's (tuiapp.security.hidden), passed in KEP_HIDDEN_PATHS; `.env` files are hidden
wherever they are, also when the list is missing. A hard link has no path of its own to check,
so a file with more than one link is compared by inode with the `.env` files beside it and in
the project root.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def is_dotenv_name(name: str) -> bool:
    return name == ".env" or name.startswith(".env.")


def _hidden_bases() -> list[str]:
    raw = os.environ.get("KEP_HIDDEN_PATHS", "")
    return [os.path.realpath(p) for p in raw.split(os.pathsep) if p]


def hidden_reason(real: Path) -> str | None:
    """Why `real` (a resolved path) may not be touched, or None."""
    if any(is_dotenv_name(part) for part in real.parts):
        return "a .env file (it holds keys)"
    text = str(real)
    for base in _hidden_bases():
        if text == base or text.startswith(base.rstrip(os.sep) + os.sep):
            return "a hidden path (kep's own data or a credential store)"
    return None


def refuse_hidden(real: Path, name: str, error: type[Exception]) -> None:
    why = hidden_reason(real)
    if why:
        raise error(f"{name} is {why}; kep's file functions never read or write it")


def dotenv_inodes(*dirs: Path) -> set[tuple[int, int]]:
    out = set()
    for d in dict.fromkeys(dirs):
        try:
            with os.scandir(d) as it:
                for e in it:
                    if is_dotenv_name(e.name):
                        st = e.stat(follow_symlinks=False)
                        out.add((st.st_dev, st.st_ino))
        except OSError:
            continue
    return out


def is_dotenv_link(st: os.stat_result, path: Path, root: Path) -> bool:
    """A hard link to a `.env` (in the root or beside `path`)."""
    if not stat.S_ISREG(st.st_mode) or st.st_nlink < 2:
        return False
    return (st.st_dev, st.st_ino) in dotenv_inodes(root, path.parent)
