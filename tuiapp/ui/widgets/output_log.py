"""A bounded, line-based log of a tool's stdout and stderr.

Built for floods: a chunk is split into lines and appended to a deque that keeps only the last
`max_lines` (older lines fall off), so memory stays bounded whatever the tool prints. Only the
visible lines are turned into Strips, on the next frame, never the whole log per chunk.
stderr lines carry the `output-log--stderr` component style.
"""

from __future__ import annotations

import re
from collections import deque
from itertools import repeat
from typing import ClassVar, Literal

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.cache import LRUCache
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tuiapp.security.display import printable

Stream = Literal["stdout", "stderr"]

# One stored line never exceeds this many characters: a tool printing 50 MB without a newline
# still yields bounded lines (the rest continues on the next line).
LINE_CAP = 2000
_NEEDS_CLEAN = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")  # control chars but \n (\t, \r too)


def _clean(text: str) -> str:
    """Terminal escapes are dropped (colours would show as noise), other control characters
    made visible (the display edge, core.display); tabs expanded."""
    text = printable(text, drop_escapes=True)
    return text.expandtabs() if "\t" in text else text


class OutputLog(ScrollView, can_focus=True):
    """Append-only text with two streams; keeps the last `max_lines` lines."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"output-log--stderr"}
    DEFAULT_CSS = """
    OutputLog {
        background: $surface;
        color: $foreground;
        overflow: auto auto;
        & > .output-log--stderr { color: $text-error; }
        &:focus { background-tint: $foreground 5%; }
    }
    """

    def __init__(self, max_lines: int | None = None, *, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.max_lines = max_lines
        self._lines: deque[tuple[Stream, str]] = deque(maxlen=max_lines)
        self._open = False  # the last line did not end with a newline yet
        self._carriage = False  # ... and ended with a carriage return
        self._width = 0
        self._appended = 0  # lines ever appended (for `dropped`)
        self._follow = True  # keep the newest line in view until the user scrolls up
        # Rendered lines by absolute line number, and the two styles: computing a widget's
        # style walks its ancestors, far too slow to do per line per frame.
        self._strips: LRUCache[int, Strip] = LRUCache(1024)
        self._styles: tuple[Style, Style] | None = None

    # ---- content ---------------------------------------------------------------------

    @property
    def line_count(self) -> int:
        return len(self._lines)

    def lines(self, stream: Stream | None = None) -> list[str]:
        return [t for s, t in self._lines if stream is None or s == stream]

    def write(self, text: str, stream: Stream = "stdout") -> None:
        """Append a chunk; a partial last line stays open for the next chunk of that stream."""
        if not text:
            return
        pieces = text.split("\n")
        ends_open = pieces[-1] != ""
        if not ends_open:
            pieces.pop()
        lines = self._lines
        if self._open and lines and lines[-1][0] == stream:
            # Continue the open line with the first piece (after a carriage return, the new
            # text replaces it, as on a terminal).
            head = lines.pop()[1]
            if not (self._carriage and pieces[0]):
                pieces[0] = head + pieces[0]
            self._appended -= 1
            self._strips.discard(self._appended)
        cap = self.max_lines
        if cap is not None and len(pieces) > cap:
            # Lines that would fall off at once are never cleaned or measured.
            self._appended += len(pieces) - cap
            pieces = pieces[-cap:]
        longest = max(map(len, pieces), default=0)
        if longest <= LINE_CAP and text.isascii() and not _NEEDS_CLEAN.search(text):
            # The common case, at C speed: plain ASCII lines (len == cells).
            lines.extend(zip(repeat(stream), pieces))
            self._appended += len(pieces)
            self._width = max(self._width, longest)
        else:
            self._write_slow(pieces, stream)
        self._open = ends_open
        self._carriage = ends_open and text.endswith("\r")
        self._changed()

    def _write_slow(self, pieces: list[str], stream: Stream) -> None:
        lines = self._lines
        width = self._width
        for piece in pieces:
            if "\r" in piece:
                # Carriage return (progress bars): keep what was written last.
                piece = next((p for p in reversed(piece.split("\r")) if p), "")
            piece = _clean(piece)
            while len(piece) > LINE_CAP:
                lines.append((stream, piece[:LINE_CAP]))
                self._appended += 1
                piece = piece[LINE_CAP:]
                width = LINE_CAP
            lines.append((stream, piece))
            self._appended += 1
            width = max(width, cell_len(piece))
        self._width = width

    @property
    def dropped(self) -> int:
        """How many lines fell off the top (the full output is in the spool file)."""
        return self._appended - len(self._lines)

    def clear(self) -> None:
        self._lines.clear()
        self._strips.clear()
        self._appended = 0
        self._open = False
        self._width = 0
        self._changed()

    def _changed(self) -> None:
        if not self.is_mounted:
            return
        self.virtual_size = Size(self._width, len(self._lines))
        if self._follow:
            self.scroll_end(animate=False, immediate=False, x_axis=False)
        self.refresh()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        # Scrolled up by the user: stop following; back at the bottom: follow again.
        if self.size.height:
            self._follow = round(new_value) >= self.max_scroll_y

    def on_mount(self) -> None:
        self.virtual_size = Size(self._width, len(self._lines))

    def on_resize(self) -> None:
        if self._follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    # ---- rendering (visible lines only) ------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = None
        self._strips.clear()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        if self._styles is None:
            base = self.rich_style
            self._styles = (base, base + self.get_component_rich_style("output-log--stderr"))
        base, err = self._styles
        if index >= len(self._lines):
            return Strip.blank(width, base)
        number = self._appended - len(self._lines) + index
        strip = self._strips.get(number)
        if strip is None:
            stream, text = self._lines[index]
            strip = Strip([Segment(text, err if stream == "stderr" else base)], cell_len(text))
            self._strips[number] = strip
        return strip.crop_extend(scroll_x, scroll_x + width, base)
