"""Cutting a Markdown reply into chunks: only between top-level blocks, never inside a code
fence. Pure functions (widgets.reply uses them; the tests check them directly)."""

from __future__ import annotations

import re

from rich.cells import cell_len

CHUNK_CHARS = 2500  # a chunk is sealed at the first block boundary past this
FENCE = re.compile(r"^ {0,3}(```|~~~)", re.M)
# A blank line followed by a line that starts a new top-level block (not indented).
BOUNDARY = re.compile(r"\n[ \t]*\n(?=[^\s])")


def estimate_height(text: str, width: int) -> int:
    """About how many lines a chunk takes once drawn: its lines wrapped at `width`, blank
    lines standing for the margins between blocks."""
    width = max(width, 10)
    return 1 + sum(max(1, -(-cell_len(line) // width)) for line in text.splitlines())


def next_cut(text: str, start: int) -> int | None:
    """The first block boundary at or after `start` that is outside a code fence (text is
    assumed to begin outside one), as an index: where a new chunk may begin."""
    for m in BOUNDARY.finditer(text, start):
        if len(FENCE.findall(text, 0, m.start())) % 2 == 0:
            return m.end()
    return None


def chunk_cuts(text: str, first: int, size: int = CHUNK_CHARS) -> list[int]:
    """Where chunks of `text` end: the first boundary at or after `first`, then one at
    least `size` further each time."""
    cuts: list[int] = []
    pos = first
    while (cut := next_cut(text, pos)) is not None:
        cuts.append(cut)
        pos = cut + size
    return cuts


def split_markdown(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """Cut text into chunks of a little over `size` characters, between blocks."""
    chunks = []
    while len(text) > size and (cut := next_cut(text, size)) is not None:
        chunks.append(text[:cut])
        text = text[cut:]
    chunks.append(text)
    return chunks
