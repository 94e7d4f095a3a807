"""The warm `kep functions --json`, answered before the rest of kep is imported: the exact
output of the last listing, kept with witnesses of everything it was made from, and served only
while every witness is unchanged.

A witness is a path and its stat (mode, inode, device, size, mtime and ctime; "-" when absent):
the config files, the trust records, the directories that decide the project root, every tool
root and everything in it, and kep's own modules that made the output. The environment, the
working directory and the interpreter must be the same too.

A snapshot is written only when the listing came whole from the declaration cache (nothing had
to run, so no verdict in it depends on the machine: a missing interpreter or an unset variable
is never cached, and is checked again on every listing), printed nothing on stderr, has no MCP
server, and no tool file's cache key holds more than the file (formats whose declarations
depend on interpreters, .env files or other files always take the full path). Every witness
is taken before the listing and again after it: a snapshot is kept only when both agree.

The file is plain bytes (length-prefixed sections, NUL-separated fields: no path or variable
can hold a NUL), read with nothing but os and sys.
"""

from __future__ import annotations

import os
import stat
import sys

from tuiapp import __version__
from tuiapp.settings import user_dirs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import TextIO

MAGIC = "kep-listing/1"
IGNORED_ENV = frozenset({"_", "OLDPWD", "SHLVL"})  # set by the shell per command; kep reads none
MAX_WITNESSES = 20_000  # a bigger tree takes the full path (walking it costs as much)
KEPT = 64  # snapshots (one per working directory and --project): the oldest go
_ENC = ("utf-8", "surrogateescape")


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def _sig(path: str, st: os.stat_result | None = None) -> str:
    st = st or _stat(path)
    if st is None:
        return "-"
    return (f"{st.st_mode},{st.st_ino},{st.st_dev},{st.st_size},{st.st_mtime_ns},"
            f"{st.st_ctime_ns}")


def _meta(project: str | None, cwd: str) -> bytes:
    root = "" if project is None else "=" + os.path.realpath(project)
    fields = (MAGIC, __version__, sys.version, sys.executable, cwd,
              "" if project is None else "=" + project, root)
    return "\0".join(fields).encode(*_ENC)


def _env() -> bytes:
    return "\0".join(sorted(f"{k}={v}" for k, v in os.environ.items()
                            if k not in IGNORED_ENV)).encode(*_ENC)


def _file(project: str | None, cwd: str) -> str:
    import zlib  # C, tiny

    key = f"{cwd}\0{project}".encode(*_ENC)
    name = f"{zlib.crc32(key):08x}{zlib.adler32(key):08x}.bin"
    return os.path.join(user_dirs.cache_dir(), "listings", name)


def _sections(data: bytes, count: int) -> list[bytes] | None:
    out = []
    pos = 0
    for _ in range(count):
        end = data.find(b"\n", pos)
        if end < 0 or not data[pos:end].isdigit():
            return None
        size = int(data[pos:end])
        out.append(data[end + 1:end + 1 + size])
        pos = end + 1 + size
    if pos > len(data):
        return None
    out.append(data[pos:])
    return out


def lookup(project: str | None) -> bytes | None:
    """The saved output, when nothing it was made from changed; else None."""
    try:
        cwd = os.getcwd()
        with open(_file(project, cwd), "rb") as f:
            data = f.read()
    except (OSError, ValueError):
        return None
    parts = _sections(data, 3)
    if parts is None:
        return None
    meta, env, witnesses, out = parts
    if meta != _meta(project, cwd) or env != _env():
        return None
    fields = witnesses.decode(*_ENC).split("\0") if witnesses else []
    if len(fields) % 2:
        return None
    for i in range(0, len(fields), 2):
        if _sig(fields[i]) != fields[i + 1]:
            return None
    return out


class _Watched:
    """stderr, noting whether anything was written to it."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner
        self.used = False

    def write(self, text: str) -> int:
        self.used = self.used or bool(text)
        return self.inner.write(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


class Recorder:
    """Started before the config is read; save() keeps the snapshot if all went quietly and
    nothing moved meanwhile. Call close() in any case (it gives stderr back)."""

    def __init__(self, project: str | None, root: str, user_files: Iterable[str]) -> None:
        self.project = project
        self.cwd = os.getcwd()
        self.env = _env()  # before the project's .env is loaded: what the next run sees
        self.paths = [*user_files, *(os.path.join(root, n) for n in ("kep.toml", ".env",
                                                                      "mcp.json"))]
        if project is None:
            self.paths += _discovery(os.path.realpath(self.cwd))
        self.roots: list[str] = []
        self.before: dict[str, str] | None = self._collect()
        self.stderr = _Watched(sys.stderr)
        sys.stderr = self.stderr  # type: ignore[assignment]

    def add_roots(self, roots: Iterable[str]) -> None:
        self.roots = list(roots)
        if self.before is not None:
            walked = self._walk()
            self.before = None if walked is None else {**self.before, **walked}

    def close(self) -> None:
        if sys.stderr is self.stderr:
            sys.stderr = self.stderr.inner

    def save(self, text: str) -> None:
        self.close()
        if self.before is None or self.stderr.used:
            return
        walked = self._walk()
        if walked is None or {**self._collect(), **walked} != self.before:
            return  # something changed while listing: the next run lists again
        try:
            out = text.encode(sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict")
        except (UnicodeError, LookupError):
            return
        witnesses = {**self.before, **_modules()}
        body = "\0".join(f"{p}\0{s}" for p, s in witnesses.items()).encode(*_ENC)
        data = b"".join(b"%d\n%s" % (len(part), part)
                        for part in (_meta(self.project, self.cwd), self.env, body)) + out
        _write(_file(self.project, self.cwd), data)

    def _collect(self) -> dict[str, str]:
        return {p: _sig(p) for p in self.paths}

    def _walk(self) -> dict[str, str] | None:
        """Every root, and everything below it (a symlinked directory inside: None)."""
        out: dict[str, str] = {}
        todo = list(self.roots)
        while todo:
            path = todo.pop()
            st = _stat(path)
            out[path] = _sig(path, st)
            if len(out) > MAX_WITNESSES:
                return None
            if st is None or not stat.S_ISDIR(st.st_mode):
                continue
            if path not in self.roots and os.path.islink(path):
                return None
            try:
                names = os.listdir(path)
            except OSError:
                return None
            todo.extend(os.path.join(path, n) for n in names)
        return out


def _discovery(here: str) -> list[str]:
    """What decides the project root from `here` (as paths.find_project_root looks): each
    directory up to the one that holds kep.toml or prompts/, or up to / when none does."""
    out = []
    d = here
    while True:
        toml, prompts = os.path.join(d, "kep.toml"), os.path.join(d, "prompts")
        out += [d, toml, prompts]
        if os.path.isfile(toml) or os.path.isdir(prompts):
            return out
        parent = os.path.dirname(d)
        if parent == d:
            return out
        d = parent


def _modules() -> dict[str, str]:
    """kep's own code that made the output: an edited module lists again."""
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path.startswith(pkg + os.sep):
            out[path] = _sig(path)
    return out


def _write(target: str, data: bytes) -> None:
    """Whole or not at all (concurrent kep processes: the last writer wins); a cache that
    cannot be written only costs speed."""
    directory = os.path.dirname(target)
    tmp = os.path.join(directory, f".{os.path.basename(target)}.{os.getpid()}.tmp")
    try:
        os.makedirs(directory, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
            _prune(directory)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:
        pass


def _prune(directory: str) -> None:
    with os.scandir(directory) as it:
        found = [(e.stat().st_mtime_ns, e.path) for e in it if e.name.endswith(".bin")]
    for _, path in sorted(found)[:-KEPT]:
        try:
            os.unlink(path)
        except OSError:
            pass
