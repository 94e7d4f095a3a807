"""Which wall a failed call ran into, told from what it printed: one line per wall, for the
tool pane, the transcript and the result the model gets ("sandbox: write outside the project
denied: /home/u/.bashrc"). A guess from the text (the kernel says EROFS or ENETUNREACH, not
which wall), so it is only ever added to what the tool said, never replaces it."""

from __future__ import annotations

import re
from pathlib import Path

from tuiapp.security.sandbox.base import Profile
from tuiapp.security.subpath import real, under

MAX_LINES = 5
_QUOTED = re.compile(r"""['"‘“`](/?[^'"’”`\n]+)['"’”`]""")
_BARE = re.compile(r"(?:^|[\s(=])(/[^\s:'\"(),]+)")
_TRAILING = re.compile(r"(?:Permission denied|Read-only file system)[:,]\s*([^\s:'\"]+)\s*$")
_AFTER = re.compile(r"(?:cannot create|cannot touch|can't create|open|write to)\s+([^\s:'\"]+)")
READ_ONLY = re.compile(r"Read-only file system|\[Errno 30\]|EROFS")
PERMISSION = re.compile(r"Permission denied|\[Errno 13\]|EACCES")
NETWORK = re.compile(
    r"Network is unreachable|\[Errno 101\]|ENETUNREACH|Temporary failure in name resolution|"
    r"Name or service not known|Could not resolve host|ENOTFOUND|EAI_AGAIN|"
    r"No address associated with hostname|getaddrinfo failed")
PROCESS = re.compile(r"kill: .*No such process|\[Errno 3\] No such process|ESRCH")


def _path_in(line: str) -> str | None:
    for rx in (_QUOTED, _TRAILING, _AFTER, _BARE):
        m = rx.search(line)
        if m:
            return m.group(1)
    return None


def explain(text: str, profile: Profile, cwd: Path | None = None) -> list[str]:
    """The walls `text` (a failed call's stderr and output) shows it ran into."""
    out: list[str] = []
    base = cwd or profile.root
    for line in text.splitlines()[-400:]:
        note = None
        if READ_ONLY.search(line):
            raw = _path_in(line)
            if raw is None:
                note = "sandbox: write outside the project denied"
            else:
                p = real(base / raw)
                if under(p, profile.root):
                    note = f"sandbox: write to a read-only part of the project denied: {p}"
                else:
                    note = f"sandbox: write outside the project denied: {p}"
        elif PERMISSION.search(line):
            raw = _path_in(line)
            p = real(base / raw) if raw else None
            if p is not None and any(under(p, h) for h in profile.hidden):
                note = f"sandbox: hidden path, reading denied: {p}"
        elif NETWORK.search(line):
            note = ("sandbox: network denied (children reach the network only as [sandbox] "
                    "network allows it)")
        elif PROCESS.search(line):
            note = "sandbox: processes outside the sandbox are out of reach (not visible)"
        if note and note not in out:
            out.append(note)
        if len(out) >= MAX_LINES:
            break
    return out

