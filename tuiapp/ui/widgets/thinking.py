"""The "thinking" block above a reply: the model's streamed reasoning or reasoning summaries,
dimmed, collapsed to one line unless opened (click it, or ctrl+b for every block).

Reasoning can run to tens of thousands of words and arrives as fast as text: the block keeps
all of it (for opening later) but draws at most every REDRAW_EVERY seconds, and an open
block shows only the last SHOWN_CHARS characters."""

from __future__ import annotations

from textual.content import Content
from textual.timer import Timer
from textual.widgets import Static

from tuiapp.security.display import printable

REDRAW_EVERY = 0.1
SHOWN_CHARS = 20_000
PREVIEW_CHARS = 200
def clean(text: str) -> str:
    """Reasoning is foreign text: through the one display-edge sanitiser (core.display)."""
    return printable(text)


class ThinkingBlock(Static):
    DEFAULT_CSS = """
    ThinkingBlock {
        color: $text-muted;
        text-style: italic;
        padding: 0 1;
        margin: 0 0 1 0;
        border-left: tall $foreground 20%;
        height: auto;
    }
    ThinkingBlock:hover { background: $boost; }
    """

    # Whether new blocks open expanded: ctrl+b flips it for every block at once.
    open_by_default = False

    def __init__(self, text: str = "", *, live: bool = False) -> None:
        super().__init__("", classes="thinking")
        self._parts = [text] if text else []
        self.expanded = ThinkingBlock.open_by_default
        self.live = live  # still streaming: the header says so
        self._timer: Timer | None = None

    @property
    def text(self) -> str:
        if len(self._parts) > 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def on_mount(self) -> None:
        self._redraw()

    def add(self, text: str) -> None:
        self._parts.append(text)
        if self._timer is None and self.is_mounted:
            self._timer = self.set_timer(REDRAW_EVERY, self._redraw)

    def finish(self) -> None:
        self.live = False
        if self.is_mounted:
            self._redraw()

    def toggle(self, expanded: bool | None = None) -> None:
        self.expanded = not self.expanded if expanded is None else expanded
        self._redraw()

    def on_click(self) -> None:
        self.toggle()

    def _redraw(self) -> None:
        self._timer = None
        text = self.text
        words = len(text.split())
        state = "thinking…" if self.live else f"thought ({words} words)"
        if not self.expanded:
            last = next((line for line in reversed(text[-PREVIEW_CHARS:].splitlines())
                         if line.strip()), "")
            self.update(Content.assemble(("▸ ", "bold"), state, "  ",
                                         (clean(last.strip()), "dim"),
                                         ("  · ctrl+b or click to open", "dim")))
            self.styles.max_height = 1
            return
        shown = text if len(text) <= SHOWN_CHARS else "… " + text[-SHOWN_CHARS:]
        self.styles.max_height = None
        self.update(Content.assemble(("▾ ", "bold"), state, "\n", clean(shown.strip())))
