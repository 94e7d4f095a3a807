"""The one reader for files a checkout controls, and what it may read at all.

The bounded reading (regular files only, size and nesting caps, strict UTF-8) is
tuiapp.settings.file_reader, re-exported here; every kep module that reads a project file
imports it from here (a test forbids raw reads elsewhere).

`confine=ROOT` adds what must never reach a request: a path that resolves outside ROOT (`../..`,
`~/.ssh/id_rsa`, a link out), a hidden path (a `.env` file, kep's own folders, credential
stores: tuiapp.security.hidden) and a hard link to the project's `.env`. A hard link has no path
of its own to check, so the inode of what was opened is compared with the `.env` files of the
root and of the file's own folder. (A hard link to a secret elsewhere cannot come with a
checkout: git and archives cannot link to an inode on this machine; only something already
running here, with access to the secret, can make one.)

Includes and documents outside ROOT are refused outright, never asked: a prompt or an agent is
text a checkout ships, and a file really wanted can be copied into the project.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tuiapp.security.hidden import is_dotenv_name, is_hidden
from tuiapp.security.subpath import under
from tuiapp.settings.file_reader import (
    MAX_BYTES,
    MAX_DEPTH,
    ProjectFileError,
    decode,
    parse_json,
    parse_toml,
    parse_yaml,
    read_json,
    read_toml,
    text_of,
    too_deep,
)
from tuiapp.settings.file_reader import read_bytes as _read_bytes

__all__ = [
    "MAX_BYTES", "MAX_DEPTH", "ProjectFileError", "confined", "decode", "parse_json",
    "parse_toml", "parse_yaml", "read_bytes", "read_json", "read_text", "read_toml",
    "read_yaml", "too_deep",
]


def confined(path: Path, root: Path) -> Path:
    """The real path to open, or ProjectFileError saying why it may not be read: outside
    `root` (after following links) or hidden."""
    real = Path(os.path.realpath(path))
    top = Path(os.path.realpath(root))
    if not under(real, top):
        shown = "" if real == Path(os.path.abspath(path)) else f" (it resolves to {real})"
        raise ProjectFileError(path, f"outside the project folder {top}{shown}; not read")
    if is_hidden(real):
        raise ProjectFileError(path, "a hidden file (a .env file, kep's own data or a "
                                     "credential store); its contents never reach a model")
    return real


def _dotenv_inodes(*dirs: Path) -> set[tuple[int, int]]:
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


def read_bytes(path: Path | str, cap: int = MAX_BYTES, *, confine: Path | None = None,
               missing_ok: bool = True, head: bool = False) -> bytes | None:
    """file_reader.read_bytes, and with `confine` only what may reach a model (see above)."""
    if confine is None:
        return _read_bytes(path, cap, missing_ok=missing_ok, head=head)
    target = confined(Path(path), confine)

    def not_a_dotenv_link(st: os.stat_result) -> None:
        if st.st_nlink > 1 and (st.st_dev, st.st_ino) in _dotenv_inodes(Path(confine),
                                                                        target.parent):
            raise ProjectFileError(path, "a hard link to the project's .env; not read")

    # The real path, opened without following a last link: one swapped in since the check
    # fails instead of leading elsewhere.
    return _read_bytes(target, cap, missing_ok=missing_ok, head=head, nofollow=True,
                       verify=not_a_dotenv_link, shown=path)


def read_text(path: Path | str, cap: int = MAX_BYTES, *, confine: Path | None = None,
              missing_ok: bool = True, errors: str = "strict", head: bool = False) -> str | None:
    """Text of a regular file (None when missing and `missing_ok`). `errors="replace"` is for
    sources kep only scans (a tool's comments); settings and included text are strict."""
    raw = read_bytes(path, cap, confine=confine, missing_ok=missing_ok, head=head)
    return text_of(raw, path, errors)


def read_yaml(path: Path | str, cap: int = MAX_BYTES, *, confine: Path | None = None) -> Any:
    """A YAML file's data, None when it does not exist (or is empty)."""
    text = read_text(path, cap, confine=confine)
    return None if text is None else parse_yaml(text, path)
