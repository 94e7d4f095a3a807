"""Cutting a Markdown reply into chunks: between top-level blocks, never inside a code fence,
while blocks are of a sane size. Pure functions (widgets.reply uses them; the tests check them
directly).

A block can be of any size: one paragraph of 10 MB, or one line without a space. Markdown lays
out a block whole, and a streamed block is parsed again on every append, so a chunk never
holds more than HARD_CHARS: a block that long is cut anyway, at a newline, else a space, else
anywhere. A cut inside a code fence is bridged: the next chunk is drawn with the fence's
opening line before it (`reopen`), so code stays code.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator
from itertools import pairwise

from rich.cells import cell_len

CHUNK_CHARS = 2500  # a chunk is sealed at the first block boundary past this
HARD_CHARS = 4 * CHUNK_CHARS  # ... and at this length whatever it holds
SPAN_CHARS = 40 * CHUNK_CHARS  # text never drawn yet is kept in frozen spans of about this
FENCE = re.compile(r" {0,3}(```|~~~)")  # at a line's start
# A blank line followed by a line that starts a new top-level block (not indented).
BOUNDARY = re.compile(r"\n[ \t]*\n(?=[^\s])")


def _cells(text: str) -> int:
    return len(text) if text.isascii() else cell_len(text)  # (isascii: one C-speed pass)


def _rows(line: str, width: int) -> int:
    """Screen rows a source line takes, wrapped at `width` (an empty one takes one)."""
    return max(1, -(-_cells(line) // max(width, 10)))


def estimate_height(text: str, width: int) -> int:
    """About how many lines a chunk takes once drawn: its lines wrapped at `width`, blank
    lines standing for the margins between blocks."""
    return 1 + sum(_rows(line, width) for line in text.splitlines())


def _boundaries(text: str, end: int | None = None) -> Iterator[tuple[int, int]]:
    """(start, end) of each block boundary outside a code fence (text is assumed to begin
    outside one) whose match starts in text[:end]. A new chunk may begin at `end`."""
    end = len(text) if end is None else end
    fences = fence_starts(text, end)  # once, not per boundary
    for m in BOUNDARY.finditer(text, 0, end):
        if bisect_left(fences, m.start()) % 2 == 0:
            yield m.start(), m.end()


def _forced_cut(text: str, lo: int, hi: int) -> int:
    """Where to cut a block too long to keep whole, in text[lo:hi]: after its last newline,
    else after its last space, else at `hi`."""
    for sep in ("\n", " "):
        at = text.rfind(sep, lo, hi)
        if at >= 0:
            return at + 1
    return hi


def chunk_cuts(text: str, first: int, size: int = CHUNK_CHARS,
               hard: int = HARD_CHARS) -> list[int]:
    """Where chunks of `text` (which begins a chunk) end: the first boundary at or after
    `first`, then one at least `size` further each time; and wherever a chunk would
    otherwise pass `hard` characters."""
    cuts: list[int] = []
    pos, start = first, 0

    def forced(until: int) -> Iterator[int]:
        nonlocal pos, start
        while until - start > hard:
            lo = max(pos, start + 1)
            cut = _forced_cut(text, lo, max(lo, start + hard))
            yield cut
            start, pos = cut, cut + size

    for found, cut in _boundaries(text):
        if found >= pos or cut - start > hard:
            cuts.extend(forced(cut))
            if found >= pos:
                cuts.append(cut)
                start, pos = cut, cut + size
    cuts.extend(forced(len(text)))
    return cuts


_BLOCK_END = re.compile(r"\n[ \t]*\n\Z")


def continues(text: str, cut: int) -> bool:
    """Whether a chunk starting at `cut` continues a block (a forced cut, see chunk_cuts)
    rather than starting a new one: drawn with no gap after the chunk before it."""
    return cut > 0 and not _BLOCK_END.search(text, max(0, cut - 200), cut)


def fence_starts(text: str, end: int | None = None) -> list[int]:
    """Where each fence line of `text[:end]` starts (pass to `reopen` when asking many
    times). Found with str.find of the marks: a multi-line regex would test every position
    of a 10 MB line, ten times slower."""
    end = len(text) if end is None else end
    starts: set[int] = set()
    for mark in ("```", "~~~"):
        at = text.find(mark, 0, end)
        while at >= 0:
            line = text.rfind("\n", 0, at) + 1
            if FENCE.match(text, line):
                starts.add(line)
            after = text.find("\n", at)  # one fence per line
            at = text.find(mark, after, end) if after >= 0 else -1
    return sorted(starts)


def reopen(text: str, cut: int, fences: list[int] | None = None) -> str:
    """The opening line of the code fence that `cut` falls inside ("" if none): what the
    chunk starting there must be drawn after. `fences`: fence_starts(text)."""
    if fences is None:
        fences = fence_starts(text)
    inside = bisect_left(fences, cut)
    if inside % 2 == 0:
        return ""
    opener = fences[inside - 1]
    line_end = text.find("\n", opener, cut)
    return text[opener:line_end if line_end >= 0 else cut].strip(" ") + "\n"


def tail_start(text: str, width: int, height: int, first: int = CHUNK_CHARS,
               cuts: list[int] | None = None) -> int | None:
    """Where the last `height` lines of `text` (wrapped at `width`) begin, moved back to the
    chunk cut (see chunk_cuts) before it: the part of a streaming reply that can be on
    screen. None when there is no such cut (all of it may be on screen). `cuts`:
    chunk_cuts(text, first), when already known."""
    width = max(width, 10)
    lines = 0
    pos = len(text)
    while pos > 0 and lines < height:
        start = text.rfind("\n", 0, pos - 1) + 1
        need = (height - lines) * width
        # A line far longer than the screen is measured by its end only.
        end_only = _cells(text[max(start, pos - 2 * need):pos]) >= need
        rows = height if end_only else _rows(text[start:pos].rstrip("\n"), width)
        if lines + rows > height or end_only:
            # A line longer than the screen: only its end can be on screen.
            pos = max(start, pos - (height - lines) * width)
            break
        lines += rows
        pos = start
    if pos == 0:
        return None
    if cuts is None:
        cuts = chunk_cuts(text, first)
    return next(reversed([cut for cut in cuts if cut <= pos]), None)


def spaced(cuts: list[int], gap: int, start: int = 0) -> list[int]:
    """The cuts at least `gap` apart (and from `start`), in order."""
    kept: list[int] = []
    for cut in cuts:
        if cut - (kept[-1] if kept else start) >= gap:
            kept.append(cut)
    return kept


def split_reply(text: str, size: int = CHUNK_CHARS) -> list[tuple[str, str]]:
    """Cut text into chunks of a little over `size` characters, between blocks (and inside
    blocks too long to keep whole): (reopen, chunk) pairs, see `reopen`."""
    cuts = [0, *chunk_cuts(text, size, size), len(text)]
    fences = fence_starts(text)
    pieces = [(reopen(text, a, fences) if a else "", text[a:b]) for a, b in pairwise(cuts) if b > a]
    return pieces or [("", text)]


def split_markdown(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """The chunks of split_reply, without their reopening lines."""
    return [chunk for _, chunk in split_reply(text, size)]
