"""Which configured writable entries may be bound: `[sandbox] writable`, a tool's own
`writable`, and the walls widened for the session or one call.

A tool writes inside the project root (and its private cache). Had entries been resolved with
realpath, a tool could plant `build -> ~` at an entry and get the link's target bound writable
at the next call. So an entry is resolved here one component at a time, and a symbolic link
that lies where a tool can write (the root, the cache, another writable entry) refuses the
entry: it is not bound, and the caller says so in one line. Links elsewhere (`/data ->
/mnt/data`, made by the user or the system) are followed: an absolute path the user named
outside the root is the folder they chose. Checked at every call (a few lstat calls), since
a later call can swap a folder for a link after the profile was resolved."""

from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from tuiapp.security.sandbox.base import Profile
from tuiapp.security.subpath import under

MAX_LINKS = 40  # as the kernel's own limit on links followed in one lookup


def lexical(entry: str | Path, root: Path) -> Path:
    """The entry made absolute without following links (`~` is the home; relative: root)."""
    p = Path(os.path.expanduser(str(entry)))
    return Path(os.path.normpath(p if p.is_absolute() else root / p))


def resolve_entry(path: Path, walls: Iterable[Path]) -> tuple[Path | None, str]:
    """`path` with each link followed, or (None, why) when a link lies under a wall."""
    walls = tuple(walls)
    parts = list(path.parts[1:])
    cur = Path("/")
    hops = 0
    while parts:
        part = parts.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            cur = cur.parent
            continue
        nxt = cur / part
        try:
            mode = os.lstat(nxt).st_mode
        except OSError:
            cur = nxt  # not there (yet): nothing to follow
            continue
        if not stat.S_ISLNK(mode):
            cur = nxt
            continue
        if any(under(cur, w) for w in walls):
            try:
                target = os.readlink(nxt)
            except OSError:
                target = "?"
            return None, f"{nxt} is a link (to {target}) where a tool can write"
        hops += 1
        if hops > MAX_LINKS:
            return None, f"too many links in {path}"
        target = Path(os.readlink(nxt))
        if target.is_absolute():
            cur = Path("/")
        parts = [*target.parts[1 if target.is_absolute() else 0:], *parts]
    return cur, ""


def check(entries: Iterable[Path], root: Path, cache: Path | None
          ) -> tuple[list[Path], list[tuple[Path, str]]]:
    """(the entries to bind, each resolved; the entries refused, with why)."""
    entries = list(dict.fromkeys(entries))
    walls = [root, *([cache] if cache is not None else []), *entries]
    ok: list[Path] = []
    refused: list[tuple[Path, str]] = []
    for e in entries:
        real, why = resolve_entry(e, walls)
        if real is None:
            refused.append((e, why))
        else:
            ok.append(real)
    return list(dict.fromkeys(ok)), refused


def bindable(prof: Profile, said: set[Path], notice: Callable[[str], None]) -> Profile:
    """`prof` with only the writable entries no tool can have redirected, each resolved; a
    refused entry is said once (`said` remembers it for the opened configuration)."""
    if not prof.writable:
        return prof
    ok, refused = check(prof.writable, prof.root, prof.cache)
    for entry, why in refused:
        if entry not in said:
            said.add(entry)
            notice(f"sandbox: writable entry {entry} not bound: {why}")
    return dataclasses.replace(prof, writable=tuple(ok))


def safe(path: Path, prof: Profile) -> bool:
    """No link a tool could have planted on the way to `path` (a wall offered for widening)."""
    walls = (prof.root, *([prof.cache] if prof.cache else []), *prof.writable)
    return resolve_entry(path, walls)[0] is not None
