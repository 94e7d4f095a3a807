"""Where each approval rule of a config file stands: its line, and the comment written just
above it (the "always" writer notes who added it and when there). tomllib keeps no
positions, so the `[[approval.rules]]` headers are found in the text; a file that writes its
rules another way (`rules = [{…}]`) gets the line of `rules` for each of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

HEADER = re.compile(r"^[ \t]*\[\[[ \t]*approval[ \t]*\.[ \t]*rules[ \t]*\]\][ \t]*(#.*)?$")
_INLINE = re.compile(r"^[ \t]*rules[ \t]*=")
TABLE = re.compile(r"^[ \t]*\[")
_APPROVAL = re.compile(r"^[ \t]*\[[ \t]*approval[ \t]*\][ \t]*(#.*)?$")
NOTE_CAP = 200  # characters of a comment shown as a rule's note


@dataclass(frozen=True)
class Place:
    line: int  # 1-based; 0 when unknown
    note: str = ""  # the comment just above the rule, without its `#`


def places(text: str, count: int) -> list[Place]:
    """The place of each of `count` rules in a config file's `text`."""
    lines = text.splitlines()
    headers = [i for i, line in enumerate(lines) if HEADER.match(line)]
    if len(headers) == count:
        return [Place(i + 1, _note_above(lines, i)) for i in headers]
    inline = _inline_rules_line(lines)
    return [Place(inline)] * count


def places_in(file: Path, count: int) -> list[Place]:
    from tuiapp.settings.config_reader import read_regular  # the same guarded read as the config
    from tuiapp.settings.config_types import ConfigError

    try:
        raw = read_regular(file) or b""
    except (ConfigError, OSError):  # it was just parsed: a race only loses the lines
        return [Place(0)] * count
    return places(raw.decode("utf-8", "replace"), count)


def _note_above(lines: list[str], index: int) -> str:
    notes: list[str] = []
    i = index - 1
    while i >= 0 and lines[i].lstrip().startswith("#") and len(notes) < 5:
        notes.append(lines[i].lstrip()[1:].strip())
        i -= 1
    note = " ".join(reversed([n for n in notes if n]))
    return note if len(note) <= NOTE_CAP else note[: NOTE_CAP - 1] + "…"


def _inline_rules_line(lines: list[str]) -> int:
    in_approval = False
    for i, line in enumerate(lines):
        if _APPROVAL.match(line):
            in_approval = True
        elif TABLE.match(line):
            in_approval = False
        elif in_approval and _INLINE.match(line):
            return i + 1
    return 0
