"""Widening a wall a call ran into: a write outside the project that the kernel refused
(EROFS on a path kep can name). The one who answers (the TUI's approval panel) is asked
whether to make that path writable for this call (it runs again), for the session, or always
(a profile entry: `[sandbox.tools.NAME] writable = [..., PATH]` in kep.toml). Network walls
are the network question's (netask.py): the proxy asks before the connection fails.

Never offered: a hidden path (a key lives there), a path inside the project (its read-only
parts are the walls against planted hooks and rules), or kep's own folders."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from tuiapp.security.grants import Scope
from tuiapp.security.sandbox import denials
from tuiapp.security.sandbox.base import Profile
from tuiapp.security.subpath import real, under

FORMAT = "sandbox-wall"  # the spec.format of a wall question shown in the approval panel
MAX_PATHS = 3

# (tool, path) → "once" | "session" | "always" | "deny" (the UI); None: never asked.
WallAsker = Callable[[str, Path], Awaitable[Any]]
asker: WallAsker | None = None
_session: dict[str, set[Path]] = {}  # tool → paths made writable for the session
_this_call: contextvars.ContextVar[tuple[Path, ...]] = contextvars.ContextVar(
    "kep_sandbox_widened", default=())


def set_asker(new: WallAsker | None) -> None:
    global asker
    asker = new


def widenable(text: str, profile: Profile, cwd: Path | None) -> list[Path]:
    """The paths a failed call was refused writing to, that may be offered for widening."""
    from tuiapp.settings import paths as kep_paths

    own = [real(p) for p in (kep_paths.config_dir(), kep_paths.data_dir(),
                                                 kep_paths.state_dir(), kep_paths.cache_dir())]
    out: list[Path] = []
    base = cwd or profile.root
    for line in text.splitlines()[-400:]:
        if not denials.READ_ONLY.search(line) or (raw := denials._path_in(line)) is None:
            continue
        p = real(base / raw)
        if (under(p, profile.root) or p == Path("/") or p in out
                or any(under(p, h) or under(h, p) for h in profile.hidden)
                or any(under(p, o) or under(o, p) for o in own)):
            continue
        out.append(p)
        if len(out) >= MAX_PATHS:
            break
    return out


def bindable(path: Path) -> Path:
    """What to make writable for `path`: itself when it exists, else its nearest folder that
    does (a file the tool was about to create)."""
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def scopes(tool: str, path: Path) -> list[Scope]:
    """What a session or "always" answer can cover, narrowest first (Scope.args: the path)."""
    first = bindable(path)
    out = [Scope(f"{first} writable for {tool}", tool, str(first))]
    if first.parent != first and first.parent != Path("/"):
        out.append(Scope(f"{first.parent} writable for {tool}", tool, str(first.parent)))
    return out


def allow_for_session(tool: str, path: Path) -> None:
    _session.setdefault(tool, set()).add(path)


@contextlib.contextmanager
def for_this_call(paths: tuple[Path, ...]) -> Iterator[None]:
    """Children started inside get `paths` writable too (the re-run of one call)."""
    token = _this_call.set(paths)
    try:
        yield
    finally:
        _this_call.reset(token)


def widened(profile: Profile, tool: str | None) -> Profile:
    """`profile` with the session's and this call's widened paths writable."""
    extra = (*sorted(_session.get(tool or "", ())), *_this_call.get())
    if not extra:
        return profile
    return dataclasses.replace(profile, writable=tuple(dict.fromkeys((*profile.writable,
                                                                       *extra))))


async def ask(tool: str, path: Path) -> bool:
    """Widen the wall at `path` for `tool`? (No asker: no.)"""
    if asker is None:
        return False
    answer = await asker(tool, path)
    return answer is True or answer in ("once", "session", "always")


def remember(root: Path, project_file: Path, tool: str, path: str) -> None:
    """"always": `path` added to `[sandbox.tools.TOOL] writable` in the project's kep.toml,
    accepted by folder trust as the user's own answer."""
    from tuiapp.security import trust
    from tuiapp.settings import config_writer

    old, new = config_writer.add_sandbox_entry(project_file, tool, "writable", path)
    trust.accept_setting(root, "sandbox", "tools", old, new)
