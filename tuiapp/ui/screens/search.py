"""The search screen (`/search WORDS`, palette "Search sessions"): messages of this project's
sessions holding every word, best first, each with its session, time and a snippet with the
words found highlighted. Enter opens the session at that message; ctrl+a widens the search to
every project; Esc closes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from tuiapp.conversation.session_search import SearchError, SearchHit
from tuiapp.conversation.store import Store
from tuiapp.ui.literal import literal, say


@dataclass(frozen=True)
class Found:
    """What the screen answers: the session and message to open."""

    session_id: str
    seq: int


class SearchScreen(ModalScreen[Found | None]):
    DEFAULT_CSS = """
    SearchScreen { align: center middle; }
    SearchScreen > Vertical {
        width: 90%; max-width: 120; height: 85%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    SearchScreen OptionList { height: 1fr; border: none; }
    SearchScreen .search--status { color: $text-muted; height: auto; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("ctrl+a", "toggle_all", "All projects", priority=True),
    ]

    def __init__(self, store: Store, root: Path, words: str = "") -> None:
        super().__init__()
        self.store, self.root, self.words = store, root, words
        self.every = False
        self.hits: list[SearchHit] = []

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Search sessions"
            yield Input(self.words, placeholder="Words to find (all of them)…", id="search-words")
            yield OptionList(id="search-hits")
            yield Static("", id="search-status", classes="search--status")

    def on_mount(self) -> None:
        self.query_one(Input).focus()
        if self.words.strip():
            self.run_search(self.words)

    def run_search(self, words: str) -> None:
        options = self.query_one(OptionList)
        status = self.query_one("#search-status", Static)
        options.clear_options()
        self.hits = []
        if not words.strip():
            status.update("Type words and press enter.")
            return
        try:
            self.hits = self.store.search(words, None if self.every else self.root)
        except SearchError as e:
            status.update(literal(e, line=True))  # one line, never a traceback
            return
        for i, h in enumerate(self.hits):
            options.add_option(Option(hit_label(h, self.every), id=str(i)))
        where = "every project" if self.every else "this project"
        status.update(say("{} hits in {}. enter opens · ctrl+a all projects · esc closes",
                          len(self.hits), where) if self.hits
                      else say("No message in {} holds every word.", where))
        if options.option_count:
            options.highlighted = 0

    @on(Input.Submitted, "#search-words")
    def _submit(self, event: Input.Submitted) -> None:
        if event.value.strip() != self.words.strip() or not self.hits:
            self.words = event.value
            self.run_search(event.value)
            return
        self._open(self.query_one(OptionList).highlighted)

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self._open(event.option_index)

    def _open(self, index: int | None) -> None:
        if index is not None and 0 <= index < len(self.hits):
            hit = self.hits[index]
            self.dismiss(Found(hit.session_id, hit.seq))

    def on_key(self, event: events.Key) -> None:
        if event.key in ("up", "down"):  # the words box keeps the keyboard
            options = self.query_one(OptionList)
            (options.action_cursor_up if event.key == "up" else options.action_cursor_down)()
            event.stop()

    def action_toggle_all(self) -> None:
        self.every = not self.every
        self.run_search(self.query_one(Input).value)

    def action_close(self) -> None:
        self.dismiss(None)


def hit_label(h: SearchHit, every: bool) -> Content:
    """Two lines: the session, message number, time and title; then the snippet with the
    words found in bold. Every foreign piece goes through the display edge (literal)."""
    when = f"{datetime.fromtimestamp(h.created):%Y-%m-%d %H:%M}"
    head = Content.assemble((h.session_id, "bold"), f"  #{h.seq}  {when}  {h.role}  ",
                            literal(h.title or "(no title)", line=True))
    if every:
        head = Content.assemble(head, "  ", literal(h.project_root, line=True).stylize("dim"))
    body = Content.assemble(*(literal(text, line=True).stylize("bold reverse") if lit
                              else literal(text, line=True) for text, lit in h.pieces))
    return Content.assemble(head, "\n  ", body)
