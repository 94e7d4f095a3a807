"""Cutting a Markdown reply into chunks: only between top-level blocks, never inside a code
fence. Pure functions (widgets.reply uses them; the tests check them directly)."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator
from itertools import pairwise

from rich.cells import cell_len

CHUNK_CHARS = 2500  # a chunk is sealed at the first block boundary past this
FENCE = re.compile(r"^ {0,3}(```|~~~)", re.M)
# A blank line followed by a line that starts a new top-level block (not indented).
BOUNDARY = re.compile(r"\n[ \t]*\n(?=[^\s])")


def _rows(line: str, width: int) -> int:
    """Screen rows a source line takes, wrapped at `width` (an empty one takes one)."""
    return max(1, -(-cell_len(line) // max(width, 10)))


def estimate_height(text: str, width: int) -> int:
    """About how many lines a chunk takes once drawn: its lines wrapped at `width`, blank
    lines standing for the margins between blocks."""
    return 1 + sum(_rows(line, width) for line in text.splitlines())


def _boundaries(text: str, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int]]:
    """(start, end) of each block boundary outside a code fence (text is assumed to begin
    outside one) whose match starts in text[start:end]. A new chunk may begin at `end`."""
    end = len(text) if end is None else end
    fences = [m.start() for m in FENCE.finditer(text, 0, end)]  # once, not per boundary
    for m in BOUNDARY.finditer(text, start, end):
        if bisect_left(fences, m.start()) % 2 == 0:
            yield m.start(), m.end()


def next_cut(text: str, start: int) -> int | None:
    """The first block boundary at or after `start`: where a new chunk may begin."""
    return next((cut for _, cut in _boundaries(text, start)), None)


def tail_start(text: str, width: int, height: int) -> int | None:
    """Where the last `height` lines of `text` (wrapped at `width`) begin, moved back to the
    block boundary before it: the part of a streaming reply that can be on screen. None when
    there is no such boundary (all of it may be on screen)."""
    lines = 0
    pos = len(text)
    while pos > 0 and lines < height:
        start = text.rfind("\n", 0, pos - 1) + 1
        lines += _rows(text[start:pos].rstrip("\n"), width)
        pos = start
    if pos == 0:
        return None
    return next(reversed([cut for _, cut in _boundaries(text, 0, pos + 1)]), None)


def chunk_cuts(text: str, first: int, size: int = CHUNK_CHARS) -> list[int]:
    """Where chunks of `text` end: the first boundary at or after `first`, then one at
    least `size` further each time."""
    cuts: list[int] = []
    pos = first
    for found, cut in _boundaries(text, first):
        if found >= pos:
            cuts.append(cut)
            pos = cut + size
    return cuts


def split_markdown(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """Cut text into chunks of a little over `size` characters, between blocks."""
    cuts = [0, *chunk_cuts(text, size, size), len(text)]
    return [text[a:b] for a, b in pairwise(cuts) if b > a] or [text]
