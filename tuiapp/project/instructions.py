"""The project's own instructions for the model: AGENTS.md, KEP.md, and CLAUDE.md where a folder
has neither, at the project root and in each parent folder up to the repository root.

Trust-gated: an untrusted checkout's files are not read (a cloned repository must not steer
the model before the user said yes), and `kep run --show-system` says so. Each file is opened
without following a link, must be a regular file, and is capped; the text goes through the
secrets filter before it can reach a request. Outermost folder first, so the instructions
nearest the project come last and read as the most specific.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuiapp.security import project_files, secrets, trust
from tuiapp.security.project_files import ProjectFileError

NAMES = ("AGENTS.md", "KEP.md")
FALLBACK = "CLAUDE.md"  # read only in a folder with none of NAMES
FILE_CAP = 32 * 1024  # bytes of one file
TOTAL_CAP = 64 * 1024  # bytes of all of them together
MAX_PARENTS = 32  # folders walked up looking for the repository root


@dataclass(frozen=True)
class Instructions:
    text: str  # the system prompt section ("" when none)
    files: tuple[Path, ...] = ()
    note: str = ""  # why nothing was read, or what was cut: one line for --show-system


def repository_root(root: Path) -> Path | None:
    """The nearest folder at or above `root` with a `.git` (folder or file), or None."""
    here = root
    for _ in range(MAX_PARENTS):
        if (here / ".git").exists():
            return here
        if here.parent == here:
            return None
        here = here.parent
    return None


def folders(root: Path) -> list[Path]:
    """The project root and its parents up to the repository root, outermost first; just the
    root outside a repository."""
    top = repository_root(root)
    out = [root]
    if top is not None:
        here = root
        while here != top and here.parent != here:
            here = here.parent
            out.append(here)
    return out[::-1]


def candidates(root: Path) -> list[Path]:
    out: list[Path] = []
    for folder in folders(root):
        found = [folder / n for n in NAMES if os.path.lexists(folder / n)]
        if not found and os.path.lexists(folder / FALLBACK):
            found = [folder / FALLBACK]
        out += found
    return out


def _read(path: Path, cap: int) -> tuple[str, bool] | None:
    """(text, cut) of a regular file, through the one reader (confined to its own folder: no
    link out, no hidden file); None when it is not one or cannot be read. Invalid UTF-8 is
    replaced, not fatal."""
    try:
        data = project_files.read_bytes(path, cap, confine=path.parent, head=True)
    except (ProjectFileError, OSError):
        return None
    if data is None:
        return None
    cut = len(data) > cap
    return data[:cap].decode("utf-8", "replace").replace("\x00", ""), cut


def load(config: Any) -> Instructions:
    """The instructions section for `config`'s project, honouring its trust decision."""
    root = Path(config.project_root).resolve()
    files = candidates(root)
    if not files:
        return Instructions("")
    if not trust.state_of(config).trusted:
        names = ", ".join(sorted({p.name for p in files}))
        return Instructions("", note=f"project instructions ({names}) are not read: this "
                                     "project is not trusted (kep trust)")
    redact = secrets.collect(config).redact
    sections: list[str] = []
    used: list[Path] = []
    notes: list[str] = []
    budget = TOTAL_CAP
    for path in files:
        if budget <= 0:
            notes.append(f"{path} left out: the instructions reached {TOTAL_CAP // 1024} KiB")
            continue
        cap = min(FILE_CAP, budget)
        got = _read(path, cap)
        if got is None:
            notes.append(f"{path} is not a regular file: not read")
            continue
        text, cut = got
        budget -= cap if cut else len(text.encode())
        if cut:
            notes.append(f"{path} was cut at {cap} bytes")
        text = redact(text).strip()
        if text:
            label = os.path.relpath(path, root) if path.parent != root else path.name
            sections.append(f"## Project instructions ({label})\n\n{text}")
            used.append(path)
    return Instructions("\n\n".join(sections), tuple(used), "; ".join(notes))
