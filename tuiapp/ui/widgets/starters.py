"""An agent's conversation starters on an empty chat, each a one-key suggestion (1…9).

A starter's number typed into the empty prompt sends it (the app watches the prompt); a
click works too and posts Starters.Chosen. Esc on the idle chat puts them away.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Static

from tuiapp.security.display import printable, printable_line

MAX_STARTERS = 9


class Starters(Vertical):
    DEFAULT_CSS = """
    Starters {
        height: auto;
        margin: 1 1;
        padding: 0 1;
        border-left: thick $accent 50%;
    }
    Starters .starters-title {
        color: $text-muted;
    }
    Starters .starter {
        height: auto;
    }
    Starters .starter:hover {
        background: $boost;
    }
    """

    class Chosen(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, title: str, starters: Sequence[str], *, id: str | None = "starters") -> None:
        super().__init__(id=id)
        self.title = title
        self.starters = list(starters)[:MAX_STARTERS]

    def compose(self) -> ComposeResult:
        hint = "  ·  type a number to send one · esc hides these"
        yield Static(Content.assemble((printable_line(self.title), "bold"), (hint, "$text-muted")),
                     classes="starters-title")
        for i, text in enumerate(self.starters, 1):
            yield Static(Content.assemble((f" {i} ", "bold reverse $accent"), " ",
                                          printable(text)),
                         classes="starter", name=str(i))

    def text_for(self, key: str) -> str | None:
        """The starter a key (\"1\"…\"9\") picks, if there is one."""
        if key.isdigit() and 1 <= int(key) <= len(self.starters):
            return self.starters[int(key) - 1]
        return None

    def choose(self, key: str) -> bool:
        text = self.text_for(key)
        if text is None:
            return False
        self.post_message(self.Chosen(text))
        return True

    def on_click(self, event: object) -> None:
        widget = getattr(event, "widget", None)
        name = getattr(widget, "name", None)
        if name:
            self.choose(name)
