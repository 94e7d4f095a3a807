"""Deleting and moving one `[[approval.rules]]` table in a config file, from the rules
screen. The file's text is edited, not re-dumped, so every comment (the "always" notes
included) and every other setting stays exactly as written; the result is parsed again and
must hold the same rules minus (or reordered by) the edit, else nothing is written.

A rule's block is its header line, the comment lines directly above it, and everything up to
the next table header (or the comments directly above that).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from tuiapp.settings.config_reader import read_regular
from tuiapp.settings.config_types import ConfigError
from tuiapp.settings.rule_places import HEADER, TABLE


class EditError(Exception):
    """Why the file was left as it was (one line)."""


def remove(file: Path, line: int) -> None:
    """Delete the rule whose header is on 1-based `line`."""
    lines, rules = _read(file)
    index = _index_of(lines, line - 1)
    start, end = _block(lines, line - 1)
    _write(file, lines[:start] + lines[end:], rules[:index] + rules[index + 1:])


def swap(file: Path, line_a: int, line_b: int) -> None:
    """Exchange the rules whose headers are on `line_a` and `line_b` (any two of one file);
    whatever stands between them stays where it is."""
    lines, rules = _read(file)
    a, b = sorted((line_a - 1, line_b - 1))
    ia, ib = _index_of(lines, a), _index_of(lines, b)
    if ia == ib:
        raise EditError("that is the same rule")
    a_start, a_end = _block(lines, a)
    b_start, b_end = _block(lines, b)
    new = (lines[:a_start] + _ended(lines[b_start:b_end]) + lines[a_end:b_start]
           + _ended(lines[a_start:a_end]) + lines[b_end:])
    order = list(rules)
    order[ia], order[ib] = order[ib], order[ia]
    _write(file, new, order)


def _ended(block: list[str]) -> list[str]:
    """A block moved up keeps a newline at its end (the file's last line may lack one)."""
    if block and not block[-1].endswith("\n"):
        return [*block[:-1], block[-1] + "\n"]
    return block


def _read(file: Path) -> tuple[list[str], list[Any]]:
    try:
        raw = read_regular(file)
    except ConfigError as e:
        raise EditError(str(e)) from None
    if raw is None:
        raise EditError(f"{file} is gone")
    text = raw.decode("utf-8")
    return text.splitlines(keepends=True), _rules(text)


def _rules(text: str) -> list[Any]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise EditError(f"not valid TOML: {e}") from None
    approval = data.get("approval", {})
    rules = approval.get("rules", []) if isinstance(approval, dict) else []
    return rules if isinstance(rules, list) else []


def _index_of(lines: list[str], header: int) -> int:
    headers = [i for i, text in enumerate(lines) if HEADER.match(text.rstrip("\r\n"))]
    if header not in headers:
        raise EditError("the file changed since it was read, or this rule is not written as "
                        "an [[approval.rules]] table: edit the file by hand")
    return headers.index(header)


def _block(lines: list[str], header: int) -> tuple[int, int]:
    start = header
    while start > 0 and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    end = header + 1
    while end < len(lines) and not TABLE.match(lines[end]):  # (a `[` at a line's start)
        end += 1
    # Comments directly above the next table belong to it.
    while end < len(lines) and end > header + 1 and lines[end - 1].lstrip().startswith("#"):
        end -= 1
    return start, end


def _write(file: Path, lines: list[str], expected: list[Any]) -> None:
    text = "".join(lines)
    if _rules(text) != expected:  # the edit must do exactly what was asked
        raise EditError("the rule could not be cut out cleanly: edit the file by hand")
    from tuiapp.settings import config_writer, toml_write

    toml_write.write_atomic(file, text)
    config_writer.note_own_write(file)
