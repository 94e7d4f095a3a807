"""An assistant reply: Markdown streamed through MarkdownStream, in bounded chunks.

Why chunks: every append to a Textual Markdown widget re-reads its whole source, and every
block is a widget the layout visits on each frame. A long reply (or a long session) would make
each frame slower than the last. So a reply is a column of Markdown chunks: the last one is
live (fed by one MarkdownStream); once it holds CHUNK_CHARS it is sealed at the next block
boundary and a new live chunk starts. Sealed chunks far outside the view are frozen (their
block widgets removed, their height kept) by the Transcript, and thawed when scrolled to.
"""

from __future__ import annotations

import asyncio
import re
import time

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.timer import Timer
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownFence, MarkdownStream

CHUNK_CHARS = 5000
FENCE = re.compile(r"^ {0,3}(```|~~~)", re.M)
# A blank line followed by a line that starts a new top-level block (not indented).
BOUNDARY = re.compile(r"\n[ \t]*\n(?=[^\s])")


class PlainFence(MarkdownFence):
    """A code block without a language is shown as plain text. Textual would otherwise ask
    Pygments to guess the language, which loads every lexer (~0.5 s) and runs again each
    time a streamed code block grows."""

    @classmethod
    def highlight(cls, code: str, language: str, ansi: bool = False,
                  dark: bool = False) -> Content:
        return super().highlight(code, language or "text", ansi, dark)


class ReplyMarkdown(Markdown):
    """One chunk of a reply. `text` is its source, kept for freezing and thawing."""

    BLOCKS = {**Markdown.BLOCKS, "fence": PlainFence, "code_block": PlainFence}  # noqa: RUF012

    def __init__(self, text: str = "") -> None:
        super().__init__(text or None)
        self.text = text
        self.frozen = False

    async def freeze(self) -> None:
        """Drop the block widgets, keep the height: the layout then skips its insides."""
        if not self.frozen:
            height = self.outer_size.height
            self.frozen = True
            await self.remove_children()
            self.styles.height = height

    async def thaw(self) -> None:
        if self.frozen:
            self.frozen = False
            self.styles.height = "auto"
            await self.update(self.text)


def next_cut(text: str, start: int) -> int | None:
    """The first block boundary at or after `start` that is outside a code fence (text is
    assumed to begin outside one), as an index: where a new chunk may begin."""
    for m in BOUNDARY.finditer(text, start):
        if len(FENCE.findall(text, 0, m.start())) % 2 == 0:
            return m.end()
    return None


def split_markdown(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """Cut text into chunks of a little over `size` characters, between blocks."""
    chunks = []
    while len(text) > size and (cut := next_cut(text, size)) is not None:
        chunks.append(text[:cut])
        text = text[cut:]
    chunks.append(text)
    return chunks


class AssistantReply(Vertical):
    """A reply. The first text shows at once; after that the live chunk is fed at most every
    FLUSH_EVERY seconds, or less often when drawing a flush takes long (at most a quarter of
    the time goes to drawing): a model can send hundreds of tokens a second, and drawing each
    would starve the stream and the keyboard."""

    FLUSH_EVERY = 0.1
    MAX_FLUSH_EVERY = 1.0

    def __init__(self, text: str = "", *, interrupted: bool = False) -> None:
        super().__init__(classes="assistant-reply")
        self._initial = text
        self._stream: MarkdownStream | None = None
        self._live: ReplyMarkdown | None = None
        self._pending: list[str] = []
        self._timer: Timer | None = None
        self._lock = asyncio.Lock()
        self._draw_cost = 0.0  # seconds from the last flush to the frame that showed it
        self.interrupted = interrupted
        self._parts = [text] if text else []  # everything received, shown or about to be

    @property
    def text(self) -> str:
        if len(self._parts) > 1:  # join lazily: += on a growing string is quadratic
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def compose(self) -> ComposeResult:
        for chunk in split_markdown(self._initial):
            yield ReplyMarkdown(chunk)
        if self.interrupted:
            yield Static("⊘ interrupted", classes="interrupted-mark")

    @property
    def live(self) -> ReplyMarkdown | None:
        """The chunk being streamed into (never frozen)."""
        return self._live

    async def write(self, text: str) -> None:
        self._parts.append(text)
        self._pending.append(text)
        if self._stream is None:
            await self._flush()
        elif self._timer is None:
            delay = min(self.MAX_FLUSH_EVERY, max(self.FLUSH_EVERY, 3 * self._draw_cost))
            self._timer = self.set_timer(delay, self._flush)

    async def _flush(self) -> None:
        # One flush at a time: sealing awaits, and a timer flush may meet finish()'s.
        async with self._lock:
            await self._flush_locked()

    async def _flush_locked(self) -> None:
        self._timer = None
        text = "".join(self._pending)
        self._pending.clear()
        if not text:
            return
        live = self._live or self.query(ReplyMarkdown).last()
        if self._stream is None:
            self._live = live
            self._stream = Markdown.get_stream(live)
        assert self._live is not None and self._stream is not None
        # Seal the live chunk at the first block boundary past CHUNK_CHARS, as often as needed.
        while len(self._live.text) + len(text) > CHUNK_CHARS:
            done = len(self._live.text)
            cut = next_cut(self._live.text + text, max(CHUNK_CHARS, done))
            if cut is None:
                break
            await self._feed(text[: cut - done])
            await self._seal()
            text = text[cut - done:]
        await self._feed(text)

    async def _feed(self, text: str) -> None:
        assert self._live is not None and self._stream is not None
        self._live.text += text
        await self._stream.write(text)
        started = time.perf_counter()
        self.call_after_refresh(self._drawn, started)

    def _drawn(self, started: float) -> None:
        self._draw_cost = time.perf_counter() - started

    async def _seal(self) -> None:
        """The live chunk is complete: stop its stream, start a new chunk after it."""
        assert self._stream is not None and self._live is not None
        await self._stream.stop()
        chunk = ReplyMarkdown()
        await self.mount(chunk, after=self._live)
        self._live, self._stream = chunk, Markdown.get_stream(chunk)

    async def finish(self, *, interrupted: bool) -> None:
        if self._timer is not None:
            self._timer.stop()
        await self._flush()
        async with self._lock:
            if self._stream is not None:
                await self._stream.stop()
                self._stream = None
            self._live = None
        if interrupted and not self.interrupted:
            self.interrupted = True
            await self.mount(Static("⊘ interrupted — the partial reply is kept",
                                    classes="interrupted-mark"))
