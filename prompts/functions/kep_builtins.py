"""Shared code of kep's built-in functions (files, shell, web). Stdlib only.

Not a tool itself: no #! line and no exec bit, so neither kep nor keprompt lists it. The
executables beside it import it; `kep init` copies it along with them.

The keprompt protocol: `EXE --list-functions` prints the definitions, `EXE --version` the
version, `EXE NAME` reads JSON arguments on stdin and prints the result; errors go to stderr
with a non-zero exit. cwd is the project root.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kep_hidden import dotenv_inodes, is_dotenv_link, is_dotenv_name, refuse_hidden

VERSION = "kep built-in functions 0.1.0"
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)


class ToolError(Exception):
    """An expected failure: printed as `Error: …` on stderr, exit code 1."""


def project_root() -> Path:
    return Path(os.getcwd()).resolve()


def outside_allowed() -> bool:
    return os.environ.get("KEP_ALLOW_OUTSIDE_ROOT") == "1"


def safe_path(name: str) -> Path:
    """`name` resolved against the project root, refused if it lands outside it (after
    following every symlink), unless KEP_ALLOW_OUTSIDE_ROOT=1.

    This only checks the name. What is opened is checked again when it is opened (open_in_root,
    write_in_root): a link swapped in after this check cannot lead outside."""
    if not isinstance(name, str) or not name:
        raise ToolError("a path is required")
    if "\0" in name:
        raise ToolError("a path cannot contain NUL")
    root = project_root()
    resolved = Path(os.path.realpath(root / name))  # absolute `name` replaces root
    if not outside_allowed() and resolved != root and root not in resolved.parents:
        raise ToolError(
            f"{name!r} resolves to {resolved}, outside the project root {root}; "
            "set [tools] allow_outside_root = true in kep.toml to allow it"
        )
    refuse_hidden(resolved, repr(name), ToolError)
    return resolved


# ---- confinement: open first, then what was opened is what was checked -------------------------

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in must not block the open
DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC | _NONBLOCK


def _changed(name: str) -> ToolError:
    return ToolError(f"{name} changed while it was being opened (a link or a non-directory "
                     "appeared in its path); nothing was read or written")


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return True  # gone as well: it changed


def _open_dir(path: Path, name: str, create: bool = False) -> int:
    """A directory fd for `path` (already checked by safe_path), reached from the root one
    component at a time without following any link: a component swapped for a link since the
    check fails here instead of leading outside. `create` makes missing directories."""
    root = project_root()
    if outside_allowed() and path != root and root not in path.parents:
        if create:
            path.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for part in path.relative_to(root).parts:
            if create:
                try:
                    os.mkdir(part, dir_fd=fd)  # never follows a link: an existing one fails
                except FileExistsError:
                    pass
            try:
                nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    if _is_link(part, fd):  # it resolved without one: swapped in since
                        raise _changed(name) from None
                    raise ToolError(f"{name}: {part} is not a directory") from None
                raise
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_in_root(path: Path, name: str) -> tuple[int, os.stat_result]:
    """An fd open for reading on `path` (checked by safe_path) and its fstat: a directory or a
    regular file, reached without following links. FIFOs, sockets and devices are refused."""
    if path == project_root() or path.parent == path:
        fd, out = None, os.open(path, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    else:
        fd = _open_dir(path.parent, name)
    try:
        if fd is not None:
            try:
                out = os.open(path.name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK,
                              dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.EMLINK):
                    raise _changed(name) from None
                raise
    finally:
        if fd is not None:
            os.close(fd)
    st = os.fstat(out)
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        os.close(out)
        raise ToolError(f"{name} is not a regular file (a FIFO, socket or device); not read")
    if is_dotenv_link(st, path, project_root()):
        os.close(out)
        raise ToolError(f"{name} is a hard link to a .env file (it holds keys); not read")
    return out, st


def write_in_root(path: Path, name: str, data: bytes) -> bool:
    """Write `data` to `path` (checked by safe_path) atomically: into a temp file created
    exclusively under a random name without following links, then renamed over the target
    (rename replaces a link, never writes through it). Missing parents are created. Returns
    whether the target existed. The existing file's permissions are kept."""
    dfd = _open_dir(path.parent, name, create=True)
    tmp = ""
    try:
        try:
            old = os.stat(path.name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            old = None
        if old is not None and stat.S_ISDIR(old.st_mode):
            raise ToolError(f"{name} is a directory")
        mode = stat.S_IMODE(old.st_mode) if old is not None and stat.S_ISREG(old.st_mode) else None
        for _ in range(100):
            tmp = f".{path.name[:200]}.{os.urandom(8).hex()}.kep-tmp"
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC,
                             0o666, dir_fd=dfd)
                break
            except FileExistsError:
                continue
        else:
            raise ToolError(f"cannot create a temporary file beside {name}")
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)  # readers never see half
        tmp = ""
        return old is not None
    finally:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
        os.close(dfd)


def walk_dir(top_fd: int, top: str = ".") -> Iterator[tuple[str, list[str], list[str], int]]:
    """os.walk over a directory fd, topdown and sorted, that never follows a link and only ever
    opens directories (O_DIRECTORY | O_NOFOLLOW): a link or a swap cannot lead outside, a FIFO
    cannot block. Yields (dirpath, dirnames, filenames, dir_fd); prune dirnames in place.
    filenames holds every non-directory (links and special files too: check before use).
    Iterative, so a tree thousands of levels deep is no recursion error; a directory's fd stays
    open only until its last subdirectory is opened."""
    stack: list[tuple[list[int] | None, str, str]] = [(None, "", top)]
    owned: set[int] = set()
    try:
        while stack:
            parent, name, rel = stack.pop()
            fd = top_fd
            if parent is not None:
                try:
                    fd = os.open(name, DIR_FLAGS, dir_fd=parent[0])
                except OSError:
                    fd = -1
                parent[1] -= 1
                if parent[1] == 0 and parent[0] in owned:  # the caller's top_fd stays open
                    owned.discard(parent[0])
                    os.close(parent[0])
                if fd < 0:
                    continue
                owned.add(fd)
            dirs, files = _scan(fd)
            yield rel, dirs, files, fd
            if dirs:
                ref = [fd, len(dirs)]
                stack.extend((ref, d, os.path.join(rel, d)) for d in reversed(dirs))
            elif fd in owned:
                owned.discard(fd)
                os.close(fd)
    finally:
        for fd in owned:
            os.close(fd)


def _scan(fd: int) -> tuple[list[str], list[str]]:
    dirs: list[str] = []
    files: list[str] = []
    try:
        with os.scandir(fd) as it:
            for e in it:
                try:
                    (dirs if e.is_dir(follow_symlinks=False) else files).append(e.name)
                except OSError:
                    continue
    except OSError:
        pass
    return sorted(dirs), sorted(files)


def kind_of(name: str, dir_fd: int) -> str:
    """"dir", "file", "link" or "other" (FIFO, socket, device), without following a link."""
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        return "other"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    return "link" if stat.S_ISLNK(mode) else "other"


def open_entry(name: str, dir_fd: int) -> int | None:
    """An fd on a regular file found while walking, or None: links are not followed, and a
    FIFO, socket or device (even one swapped in after kind_of) is never read."""
    if kind_of(name, dir_fd) != "file" or is_dotenv_name(name):
        return None
    try:
        fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or (st.st_nlink > 1 and (st.st_dev, st.st_ino) in
                                        dotenv_inodes(project_root())):
        os.close(fd)
        return None
    return fd


def shown(path: Path) -> str:
    """A path as the model should reuse it: relative to the project root when inside."""
    root = project_root()
    try:
        rel = path.relative_to(root)
    except ValueError:
        return str(path)
    return str(rel) if str(rel) != "." else "."


def is_binary_fd(fd: int) -> bool:
    """A NUL in the first 8 KiB; the fd is left at offset 0."""
    try:
        head = os.pread(fd, 8192, 0)
    except OSError:
        return True
    return b"\0" in head


Function = tuple[Callable[..., str], dict[str, Any]]


def serve(functions: dict[str, Function], hidden: dict[str, Function] | None = None) -> int:
    """The protocol's command line for one executable. `hidden` functions answer by name but
    are not listed (kep calls them itself; a model never sees them)."""
    args = sys.argv[1:]
    if not args:
        print(
            f"usage: {Path(sys.argv[0]).name} --list-functions | --version | FUNCTION < ARGS.json",
            file=sys.stderr,
        )
        return 2
    if args[0] == "--list-functions":
        print(json.dumps([d for _, d in functions.values()], indent=1))
        return 0
    if args[0] == "--version":
        print(VERSION)
        return 0
    entry = functions.get(args[0]) or (hidden or {}).get(args[0])
    if entry is None:
        print(
            f"Error: unknown function {args[0]!r}; this file has: {', '.join(functions)}",
            file=sys.stderr,
        )
        return 2
    try:
        raw = sys.stdin.read()
        arguments = json.loads(raw) if raw.strip() else {}
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        print(f"Error: arguments on stdin are not valid JSON: {e}", file=sys.stderr)
        return 2
    if not isinstance(arguments, dict):
        print("Error: arguments must be a JSON object", file=sys.stderr)
        return 2
    fn, definition = entry
    known = definition["parameters"].get("properties", {})
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        print(
            f"Error: unknown argument(s) {', '.join(unknown)}; expected: {', '.join(known)}",
            file=sys.stderr,
        )
        return 2
    try:
        result = fn(**arguments)
    except ToolError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    except TypeError as e:  # a required argument is missing
        print(f"Error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        where = f": {e.filename}" if e.filename else ""
        print(f"Error: {e.strerror or e}{where}", file=sys.stderr)
        return 1
    sys.stdout.write(printable(result if result.endswith("\n") else result + "\n"))
    return 0


def printable(text: str) -> str:
    """A file name that is not UTF-8 shows as \\xNN, so what kep reads back is valid text."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "backslashreplace")
    return raw.decode("utf-8", "backslashreplace")


def definition(
    name: str, description: str, properties: dict[str, Any], required: list[str]
) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        },
    }
