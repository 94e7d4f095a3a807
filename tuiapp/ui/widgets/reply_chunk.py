"""One chunk of an assistant reply (see widgets.reply for why a reply is cut into chunks):
a Markdown widget that can be frozen (its blocks dropped, its height kept) and thawed."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from textual import events
from textual.await_complete import AwaitComplete
from textual.widget import Widget
from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownBlock

from tuiapp.ui.widgets.chunking import HARD_CHARS, continues, estimate_height, split_reply
from tuiapp.ui.widgets.markdown_blocks import REPLY_BLOCKS

SPLIT_WAYS = 6  # a frozen span shown is split into at most this many parts at a time


@runtime_checkable
class ChunkHolder(Protocol):
    """What holds the chunks (widgets.reply.AssistantReply)."""

    def appended(self) -> None: ...
    def mark_joins(self) -> None: ...


class ReplyMarkdown(Markdown):
    """One chunk of a reply. `text` is its part of the reply, kept for freezing and thawing;
    it is drawn after `reopen` (a code fence's opening line when the chunk starts inside one,
    see chunking.reopen)."""

    BLOCKS = REPLY_BLOCKS

    def __init__(self, text: str = "", *, frozen_height: int | None = None,
                 reopen: str = "", continued: bool = False) -> None:
        frozen = frozen_height is not None
        # continued: it starts inside a block the chunk before it ends in (a block too long
        # to keep whole): the two are drawn without a gap (fit_edges).
        classes = "reply-chunk -continued" if continued else "reply-chunk"
        super().__init__(None if frozen else (reopen + text or None), classes=classes)
        self.text = text
        self.reopen = reopen
        self.frozen = frozen  # born frozen: never parsed unless scrolled to
        if frozen_height is not None:
            self.styles.height = frozen_height

    @property
    def drawn_source(self) -> str:
        """What is drawn: the text after its reopening line."""
        return self.reopen + self.text

    async def _on_mount(self, event: events.Mount) -> None:
        if self.frozen or not self.drawn_source:
            # Nothing to draw: Markdown's own handler would parse an empty document (in a
            # worker thread) and announce an empty table of contents, and frozen chunks are
            # mounted by the dozen.
            Widget._on_mount(self, event)
            event.prevent_default()

    def update(self, markdown: str) -> AwaitComplete:
        updating = super().update(markdown)

        async def then_fit() -> None:
            await updating
            self.fit_edges()

        return AwaitComplete(then_fit())

    def fit_edges(self) -> None:
        """No gap where a block goes on from the chunk before (-continued: its first block)
        or into the next one (-joined: its last block). Set on the blocks themselves: a
        :first-child / :last-child CSS rule would make every mount of a block restyle all
        the blocks of its chunk (Textual's order-dependent styles), on every append."""
        blocks = [child for child in self.children if isinstance(child, MarkdownBlock)]
        last = len(blocks) - 1
        for i, block in enumerate(blocks):
            edges = (i == 0 and self.has_class("-continued"),
                     i == last and self.has_class("-joined"))
            if getattr(block, "_kep_edges", (False, False)) == edges:
                continue
            block.styles.clear_rule("margin")
            if any(edges):
                m = block.styles.margin
                block.styles.margin = (0 if edges[0] else m.top, m.right,
                                       0 if edges[1] else m.bottom, m.left)
            block._kep_edges = edges  # type: ignore[attr-defined]

    def append(self, markdown: str) -> AwaitComplete:
        """Markdown.append (what the MarkdownStream calls), telling the reply when done:
        it feeds one slice at a time."""
        appending = super().append(markdown)

        async def then_tell() -> None:
            await appending
            self.fit_edges()
            reply = self.parent
            if isinstance(reply, ChunkHolder):
                reply.appended()

        return AwaitComplete(then_tell())

    async def freeze(self, height: int | None = None) -> None:
        """Drop the block widgets, keep the height (or take `height`): the layout then skips
        its insides."""
        if not self.frozen:
            height = self.outer_size.height if height is None else height
            self.frozen = True
            await self.remove_children()
            self.styles.height = height

    async def thaw(self) -> None:
        if self.frozen and len(self.text) > HARD_CHARS:
            await self._split()
        elif self.frozen:
            self.frozen = False
            self.styles.height = "auto"
            await self.update(self.drawn_source)

    async def _split(self) -> None:
        """A frozen span (text that came faster than it could be drawn) becomes its
        chunks, still frozen, each at its estimated height: the transcript thaws those in
        view. Drawn whole, a span would hold the screen for seconds."""
        parent = self.parent
        if not isinstance(parent, Widget):
            return
        width = parent.content_size.width or 80
        source = self.drawn_source
        pieces = split_reply(source)
        # The first piece starts with this span's own reopening line.
        pieces[0] = (self.reopen, pieces[0][1][len(self.reopen):])
        # A long span becomes SPLIT_WAYS smaller spans (each split again when in view): its
        # every chunk at once would be dozens of widgets to style and lay out in one frame.
        if len(pieces) > 2 * SPLIT_WAYS:
            size = -(-len(pieces) // SPLIT_WAYS)
            pieces = [(pieces[i][0], "".join(text for _, text in pieces[i:i + size]))
                      for i in range(0, len(pieces), size)]
        chunks, start = [], 0
        for opening, text in pieces:
            chunks.append(ReplyMarkdown(
                text, reopen=opening, frozen_height=estimate_height(text, width),
                continued=continues(source, start) if start else self.has_class("-continued")))
            start += len(text) + (len(self.reopen) if not start else 0)
        await parent.mount_all(chunks, before=self)
        await self.remove()
        if isinstance(parent, ChunkHolder):
            parent.mark_joins()


WARM_UP_TEXT = (
    "# Heading\n\nText with *emphasis*, **strong**, `code` and a [link](https://x).\n\n"
    "- item\n  - nested\n\n1. first\n\n> quote\n\n```\ncode\n```\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n\n---\n")


class WarmUp(ReplyMarkdown):
    """A reply chunk with one of each block, mounted hidden once when the app is idle and
    then removed: the first real reply does not pay for Markdown's first use (the CSS of every
    block class parsed, their code paths loaded), which would otherwise delay its first
    words by a few hundred milliseconds."""

    DEFAULT_CSS = "WarmUp { display: none; }"

    def __init__(self) -> None:
        super().__init__(WARM_UP_TEXT)
        self.remove_class("reply-chunk")  # not a chunk of any reply

    async def on_mount(self) -> None:
        self.call_after_refresh(self.remove)
