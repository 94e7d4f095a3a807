"""The help screen (F1, `/help`, the palette's Help): kep's topic pages (tuiapp/docs), rendered,
with a search box over every page and links between topics followed in place."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Markdown, MarkdownViewer, OptionList, Static
from textual.widgets.option_list import Option

from tuiapp import docs
from tuiapp.ui import keys
from tuiapp.ui.focus import focus_now
from tuiapp.ui.literal import literal, say


class TopicViewer(MarkdownViewer):
    """Follows links to other topic pages (and anchors) in place; any other link is only
    named (a page must not open a browser or a file outside the docs)."""

    async def _on_markdown_link_clicked(self, message: Markdown.LinkClicked) -> None:
        message.stop()
        message.prevent_default()  # not MarkdownViewer's handler too (it opens any path)
        href = message.href
        target, _, anchor = href.partition("#")
        if not target and anchor:
            self.document.goto_anchor(anchor)
            return
        topic = Path(target).stem
        page = docs.path(topic) if target.endswith(".md") and "/" not in target else None
        if page is None:
            self.notify(say("Link: {}", href), title="Help")
            return
        await self.screen.show(topic, anchor)  # type: ignore[attr-defined]


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical { width: 96%; height: 94%; background: $surface;
                            border: round $primary; }
    HelpScreen #help-title { height: 1; padding: 0 1; text-style: bold; }
    HelpScreen #help-search { height: 1; border: none; padding: 0 1; margin: 0; }
    HelpScreen Horizontal { height: 1fr; }
    HelpScreen #help-topics { width: 28; height: 1fr; border: none; }
    HelpScreen TopicViewer { width: 1fr; height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "close", id="help_close")]

    def __init__(self, topic: str = "overview") -> None:
        super().__init__()
        self.topic = topic if docs.path(topic) else "overview"

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Help · type to search · Enter opens · Esc closes", id="help-title")
            yield Input(placeholder="search every topic", id="help-search", compact=True)
            with Horizontal():
                yield OptionList(*self._options(docs.TOPICS), id="help-topics", compact=True)
                yield TopicViewer(show_table_of_contents=False)

    def _options(self, topics: object) -> list[Option]:
        return [Option(literal(t, line=True), id=t)  # type: ignore[attr-defined]
                for t, *_ in topics]  # type: ignore[attr-defined]

    async def on_mount(self) -> None:
        await self.show(self.topic)
        focus_now(self.query_one("#help-search", Input))

    async def show(self, topic: str, anchor: str = "") -> None:
        page = docs.path(topic)
        if page is None:
            return
        self.topic = topic
        viewer = self.query_one(TopicViewer)
        await viewer.document.load(page)
        if topic == "keys" and (moved := keys.moved()):  # the page says the defaults
            await viewer.document.mount(Static(say("Your [keys] in force: {}", moved),
                                               id="keys-in-force"), before=0)
        if anchor:
            viewer.document.goto_anchor(anchor)
        else:
            viewer.scroll_home(animate=False)
        self.query_one("#help-title", Static).update(
            say("Help · {} · type to search · Enter opens · Esc closes", docs.title(topic)))

    @on(Input.Changed, "#help-search")
    def _search(self, event: Input.Changed) -> None:
        found = docs.search(event.value) if event.value.strip() else list(docs.TOPICS)
        listing = self.query_one("#help-topics", OptionList)
        listing.set_options(self._options(found))
        if found:
            listing.highlighted = 0

    @on(Input.Submitted, "#help-search")
    async def _open_first(self) -> None:
        listing = self.query_one("#help-topics", OptionList)
        if listing.option_count:
            option = listing.get_option_at_index(listing.highlighted or 0)
            await self.show(option.id or "overview")
            focus_now(self.query_one(TopicViewer).document)

    @on(OptionList.OptionSelected, "#help-topics")
    async def _chosen(self, event: OptionList.OptionSelected) -> None:
        await self.show(event.option.id or "overview")

    def action_close(self) -> None:
        self.dismiss(None)
