"""Is a path at or below another? The one check every wall and hidden-path test uses.

On strings: `base in path.parents` builds a Path per ancestor, and the sandbox asks this for
every hidden path against every shown one at each call's start. A string check is only right
on normal paths, so `under` normalises what it cannot trust to be normal already: a `..`, a
`.`, a doubled or trailing slash (os.path.normpath, no file system access). Links are the
caller's to resolve (`real`) where the path comes from outside: a string cannot know that
/root/proj/link points at /root/.ssh."""

from __future__ import annotations

import os
from pathlib import Path


def real(path: str | Path) -> Path:
    """`path` with its links followed and its `..` resolved, as the kernel would open it. A
    path no file can have (a NUL byte in what a tool printed) is only normalised."""
    try:
        return Path(os.path.realpath(path))
    except ValueError:
        return Path(os.path.normpath(path))


def _normal(s: str) -> str:
    # Only what needs it (a dot file such as .ssh does not): cheap on the sandbox's hot path.
    if ("/./" in s or "/../" in s or "//" in s or s.endswith(("/.", "/..")) or s == ".."
            or (len(s) > 1 and s.endswith("/"))):
        return os.path.normpath(s)
    return s


def under(path: str | Path, base: str | Path) -> bool:
    """True when `path` is `base` or lies inside it (/root/project2 is not inside /root/proj)."""
    p, b = _normal(str(path)), _normal(str(base))
    return p == b or p.startswith(b if b.endswith("/") else b + "/")
