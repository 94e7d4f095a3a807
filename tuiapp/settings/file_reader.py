"""The bounded reader of files kep does not control: kep.toml, mcp.json, `.env`, Loki and
llm-functions config, `.prompt` files and what they include, agent files, themes.

Such a file is foreign input. Whatever is at one of those names (a FIFO, a link to /dev/zero, a
directory, a 2 GB file, invalid UTF-8, 100,000 levels of brackets) costs one clear line, never
a hang, a MemoryError or a RecursionError. So every read here:

- opens without blocking (a FIFO would wait for a writer) and checks what was opened (fstat),
  so only a regular file is ever read;
- reads at most `cap + 1` bytes, so a size cap holds whatever the file claims to be;
- decodes strictly (the line and column of a bad byte are named);
- parses TOML, JSON and YAML with a nesting cap.

It sits in the settings layer, the lowest that reads files, so kep.toml and the user's config
are read by it too. What may be read at all (inside the project, never a hidden file) is
tuiapp.security.project_files, which every other reader of project files goes through.
Stdlib (and PyYAML, lazily) only.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAX_BYTES = 16 * 1024 * 1024  # a config file this big is a mistake, not a config
MAX_DEPTH = 64  # tables/arrays nested deeper than this are refused (no config needs it)

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class ProjectFileError(Exception):
    """One clear line about a project file: `str(e)` is `PATH: REASON`."""

    def __init__(self, path: Path | str, reason: str, key: str = "", line: int = 0) -> None:
        self.path, self.reason, self.key, self.line = Path(path), reason, key, line
        where = (f":{line}" if line else "") + (f" ({key})" if key else "")
        super().__init__(f"{path}{where}: {reason}")


def _size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):g} MB"
    return f"{n / 1024:g} KB" if n >= 1024 else f"{n} bytes"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a file"


def read_bytes(path: Path | str, cap: int = MAX_BYTES, *, missing_ok: bool = True,
               head: bool = False, nofollow: bool = False,
               verify: Callable[[os.stat_result], None] | None = None,
               shown: Path | str | None = None) -> bytes | None:
    """The bytes of a regular file (at most `cap`), None when it does not exist and
    `missing_ok`. Anything else wrong is one ProjectFileError naming `shown` (default: the
    path). `head` reads the first `cap + 1` bytes of a bigger file instead of refusing it (the
    caller says it was cut). `nofollow` refuses a link as the last component; `verify` is
    called with the fstat of what was opened, before a byte is read, and may raise."""
    target = Path(path)
    path = Path(shown) if shown is not None else target
    flags = os.O_RDONLY | _NONBLOCK | _CLOEXEC | (_NOFOLLOW if nofollow else 0)
    try:
        fd = os.open(target, flags)
    except FileNotFoundError:
        if target.is_symlink():
            raise ProjectFileError(path, f"a dangling symlink (to {os.readlink(target)})") \
                from None
        if missing_ok:
            return None
        raise ProjectFileError(path, "no such file") from None
    except OSError as e:
        if nofollow and e.errno in (errno.ELOOP, errno.EMLINK):  # swapped in since a check
            raise ProjectFileError(path, "changed while it was opened (a link appeared); "
                                         "not read") from None
        raise ProjectFileError(path, f"cannot read: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ProjectFileError(path, f"not a regular file ({_kind(st.st_mode)}); not read")
        if verify is not None:
            verify(st)
        if st.st_size > cap and not head:  # said up front, before a byte is read
            raise ProjectFileError(path, f"too big ({_size(st.st_size)}; at most {_size(cap)})")
        chunks, got = [], 0
        while got <= cap:  # a file that grows while read (or lies in st_size) stops at cap+1
            try:
                chunk = os.read(fd, min(1 << 20, cap + 1 - got))
            except OSError as e:
                raise ProjectFileError(path, f"cannot read: {e.strerror}") from None
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > cap and not head:
            raise ProjectFileError(path, f"too big (over {_size(cap)})")
        return b"".join(chunks)
    finally:
        os.close(fd)


def decode(raw: bytes, path: Path | str) -> str:
    """UTF-8 text, or one line naming where the first bad byte is."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise ProjectFileError(path, f"not valid UTF-8 at line {line}, column {col} "
                                     f"(byte {e.start})") from None


def read_text(path: Path | str, cap: int = MAX_BYTES, *, missing_ok: bool = True,
              errors: str = "strict", head: bool = False) -> str | None:
    """Text of a regular file (None when missing and `missing_ok`). `errors="replace"` is for
    sources kep only scans (a tool's comments); settings and included text are strict."""
    raw = read_bytes(path, cap, missing_ok=missing_ok, head=head)
    return text_of(raw, path, errors)


def text_of(raw: bytes | None, path: Path | str, errors: str = "strict") -> str | None:
    if raw is None:
        return None
    return raw.decode("utf-8", errors) if errors != "strict" else decode(raw, path)


def too_deep(data: Any, limit: int = MAX_DEPTH) -> str | None:
    """The dotted key where `data` nests deeper than `limit`, or None (iterative: a deep
    value cannot exhaust the stack here)."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        node, key, depth = stack.pop()
        if depth > limit:
            return key.split(".", 1)[0] or "(top)"
        if isinstance(node, dict):
            stack.extend((v, f"{key}.{k}" if key else str(k), depth + 1) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, key, depth + 1) for v in node)
    return None


def _deep(path: Path | str, key: str = "") -> ProjectFileError:
    return ProjectFileError(path, f"nested too deeply (at most {MAX_DEPTH} levels)", key)


def _bracket_depth(text: str, limit: int) -> bool:
    """Whether `[`/`{` nest deeper than `limit` outside strings: checked before parsing, so a
    100,000-deep file costs one linear scan, not a parser's recursion."""
    depth, quote, escaped = 0, "", False
    for c in text:
        if quote:
            if escaped:
                escaped = False
            elif c == "\\" and quote == '"':
                escaped = True
            elif c == quote or c == "\n":
                quote = ""
        elif c in "[{":
            depth += 1
            if depth > limit:
                return True
        elif c in "]}":
            depth = max(0, depth - 1)
        elif c in "\"'":
            quote = c
    return False


def _checked(data: Any, path: Path | str) -> Any:
    where = too_deep(data)
    if where is not None:
        raise _deep(path, "" if where == "(top)" else where)
    return data


def _parse(text: str, path: Path | str, load: Callable[[str], Any],
           error: type[Exception], kind: str) -> Any:
    """`load(text)`, nesting checked before and after; a parse error is one line."""
    if _bracket_depth(text, MAX_DEPTH * 4):
        raise _deep(path)
    try:
        return _checked(load(text), path)
    except error as e:
        raise ProjectFileError(path, f"not valid {kind}: {e}") from None
    except RecursionError:
        raise _deep(path) from None


def parse_toml(text: str, path: Path | str) -> dict[str, Any]:
    return _parse(text, path, tomllib.loads, tomllib.TOMLDecodeError, "TOML")  # type: ignore[no-any-return]


def parse_json(text: str, path: Path | str) -> Any:
    return _parse(text, path, json.loads, json.JSONDecodeError, "JSON")


def parse_yaml(text: str, path: Path | str) -> Any:
    import yaml  # only for the formats that use YAML

    if _bracket_depth(text, MAX_DEPTH * 4):
        raise _deep(path)
    try:
        return _checked(yaml.safe_load(text), path)
    except yaml.YAMLError as e:
        # The problem only: PyYAML's message quotes the offending source lines too.
        problem = getattr(e, "problem", None) or type(e).__name__
        mark = getattr(e, "problem_mark", None)
        raise ProjectFileError(path, f"not valid YAML: {problem}",
                               line=mark.line + 1 if mark is not None else 0) from None
    except RecursionError:
        raise _deep(path) from None


def read_toml(path: Path | str, cap: int = MAX_BYTES) -> dict[str, Any] | None:
    """A TOML file's data, None when it does not exist; anything wrong is one line."""
    text = read_text(path, cap)
    return None if text is None else parse_toml(text, path)


def read_json(path: Path | str, cap: int = MAX_BYTES) -> Any:
    """A JSON file's data, None when it does not exist; anything wrong is one line."""
    text = read_text(path, cap)
    return None if text is None else parse_json(text, path)


def read_yaml(path: Path | str, cap: int = MAX_BYTES) -> Any:
    """A YAML file's data, None when it does not exist (or is empty)."""
    text = read_text(path, cap)
    return None if text is None else parse_yaml(text, path)
