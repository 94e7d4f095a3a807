"""Lighter Markdown blocks for replies. Textual draws every block as widgets, and every widget
costs layout time on each frame; a streamed reply is mostly paragraphs, lists and code.

- A list item that holds one paragraph (nearly all of them) is one widget that draws its
  bullet and a hanging indent itself, instead of four (row, bullet, column, paragraph).
  Items holding anything else (a nested list, code, several paragraphs) keep Textual's form.
- A code block without a language is shown as plain text instead of guessed.
"""

from __future__ import annotations

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Markdown

# The block classes are not re-exported by textual.widgets.markdown; Markdown.BLOCKS names
# them, and that mapping is the documented way to replace them.
from textual.widgets._markdown import (
    MarkdownBlock,
    MarkdownBullet,
    MarkdownBulletList,
    MarkdownFence,
    MarkdownListItem,
    MarkdownOrderedList,
    MarkdownOrderedListItem,
    MarkdownParagraph,
)


class PlainFence(MarkdownFence):
    """A code block without a language is shown as plain text. Textual would otherwise ask
    Pygments to guess the language, which loads every lexer (~0.5 s) and runs again each
    time a streamed code block grows."""

    @classmethod
    def highlight(cls, code: str, language: str, ansi: bool = False,
                  dark: bool = False) -> Content:
        return super().highlight(code, language or "text", ansi, dark)


class CompactListItem(MarkdownBlock):
    """One list item of one paragraph: `bullet` then the text, wrapped lines indented under
    the text."""

    DEFAULT_CSS = """
    CompactListItem {
        width: 1fr;
        height: auto;
    }
    """

    def __init__(self, item: MarkdownListItem, bullet: str, paragraph: MarkdownBlock) -> None:
        super().__init__(item._markdown, item._token)
        self.bullet = bullet
        self.text = paragraph._content
        self._cache: tuple[int, bool, Content, int] | None = None  # width, dark, lines, rows

    def _lines(self, width: int) -> tuple[Content, int]:
        dark = self.app.current_theme.dark
        if self._cache is None or self._cache[:2] != (width, dark):
            indent = cell_len(self.bullet)
            lines = self.text.wrap(max(1, width - indent)) or [Content("")]
            bullet = Content.styled(self.bullet, "$text-primary" if dark else "$text-secondary")
            pad = " " * indent
            self._cache = (width, dark, Content("\n").join(
                [bullet + lines[0], *(pad + line for line in lines[1:])]), len(lines))
        return self._cache[2:]

    def render(self) -> Content:
        return self._lines(self.content_region.width or self.size.width)[0]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return self._lines(width)[1]

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return container.width


def _item(item: MarkdownListItem, bullet: str) -> Widget:
    blocks = item._blocks
    if len(blocks) == 1 and isinstance(blocks[0], MarkdownParagraph):
        return CompactListItem(item, bullet, blocks[0])
    mark = MarkdownBullet()
    mark.symbol = bullet
    return Horizontal(mark, Vertical(*blocks))


class CompactBulletList(MarkdownBulletList):
    def compose(self) -> ComposeResult:
        for block in self._blocks:
            if isinstance(block, MarkdownListItem):
                yield _item(block, block.bullet)
        self._blocks.clear()


class CompactOrderedList(MarkdownOrderedList):
    def compose(self) -> ComposeResult:
        items = [b for b in self._blocks if isinstance(b, MarkdownListItem)]
        start = 1
        if items and isinstance(items[0], MarkdownOrderedListItem):
            try:
                start = int(items[0].bullet)
            except ValueError:
                pass
        width = max((len(f"{n}. ") for n in range(start, start + len(items))), default=0)
        for number, block in enumerate(items, start):
            yield _item(block, f"{number}. ".rjust(width + 1))
        self._blocks.clear()


REPLY_BLOCKS = {**Markdown.BLOCKS, "fence": PlainFence, "code_block": PlainFence,
                "bullet_list_open": CompactBulletList, "ordered_list_open": CompactOrderedList}
