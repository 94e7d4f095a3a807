"""An assistant reply: Markdown streamed through MarkdownStream, in bounded chunks.

Why chunks: every append to a Textual Markdown widget re-reads its whole source, and every
block is a widget the layout visits on each frame. A long reply (or a long session) would make
each frame slower than the last. So a reply is a column of Markdown chunks: the last one is
live (fed by one MarkdownStream); once it holds CHUNK_CHARS it is sealed at the next block
boundary and a new live chunk starts. Sealed chunks far outside the view are frozen (their
block widgets removed, their height kept) by the Transcript, and thawed when scrolled to.
Text that arrives faster than it can be drawn is only drawn near the end of the reply (what
is on screen); the rest starts frozen, at an estimated height.
"""

from __future__ import annotations

import asyncio
import time
from itertools import pairwise

from textual import events
from textual.app import ComposeResult
from textual.await_complete import AwaitComplete
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownStream

from tuiapp.ui.widgets.chunking import (
    CHUNK_CHARS,
    HARD_CHARS,
    SPAN_CHARS,
    chunk_cuts,
    continues,
    estimate_height,
    fence_starts,
    reopen,
    spaced,
    split_reply,
    tail_start,
)
from tuiapp.ui.widgets.markdown_blocks import REPLY_BLOCKS
from tuiapp.ui.widgets.thinking import ThinkingBlock

FEED_SLICE = 600  # characters per Markdown append: its parse and mount run as one step
APPEND_WAIT = 2.0  # seconds to wait for an append before feeding more anyway


class ReplyMarkdown(Markdown):
    """One chunk of a reply. `text` is its part of the reply, kept for freezing and thawing;
    it is drawn after `reopen` (a code fence's opening line when the chunk starts inside one,
    see chunking.reopen)."""

    BLOCKS = REPLY_BLOCKS

    def __init__(self, text: str = "", *, frozen_height: int | None = None,
                 reopen: str = "", continued: bool = False) -> None:
        frozen = frozen_height is not None
        # continued: it starts inside a block the chunk before it ends in (a block too long
        # to keep whole): the two are drawn without a gap (later.tcss).
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

    def append(self, markdown: str) -> AwaitComplete:
        """Markdown.append (what the MarkdownStream calls), telling the reply when done:
        it feeds one slice at a time."""
        appending = super().append(markdown)

        async def then_tell() -> None:
            await appending
            reply = self.parent
            if isinstance(reply, AssistantReply):
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
        chunks, start = [], 0
        for opening, text in pieces:
            chunks.append(ReplyMarkdown(
                text, reopen=opening, frozen_height=estimate_height(text, width),
                continued=continues(source, start) if start else self.has_class("-continued")))
            start += len(text) + (len(self.reopen) if not start else 0)
        await parent.mount_all(chunks, before=self)
        await self.remove()
        if isinstance(parent, AssistantReply):
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


class AssistantReply(Vertical):
    """A reply. The first text shows at once; after that the live chunk is fed at most every
    FLUSH_EVERY seconds, or less often when a flush takes long: the next one waits four times
    as long as the last took, so drawing gets at most a fifth of the time. A model can send
    thousands of tokens a second; drawing at that pace would starve the stream and the keys."""

    FLUSH_EVERY = 0.1
    FLOOD_FLUSH_EVERY = 0.5  # when more than a screenful came since the last flush
    MAX_FLUSH_EVERY = 1.0

    class Flushed(Message):
        """New text was drawn (and chunks may have moved out of view)."""

    def __init__(self, text: str = "", *, interrupted: bool = False, thinking: str = "") -> None:
        super().__init__(classes="assistant-reply")
        self._initial = text
        self.thinking = ThinkingBlock(thinking) if thinking else None  # (widgets.thinking)
        self._composed = False
        self._stream: MarkdownStream | None = None
        self._live: ReplyMarkdown | None = None
        self._pending: list[str] = []
        self._timer: Timer | None = None
        self._lock = asyncio.Lock()
        self._appended = asyncio.Event()
        self._draw_cost = 0.0  # seconds the last flush took, waits included
        self._flooded = False  # the last flush had more text than fits on screen
        self._marked = False  # the "interrupted" line is shown
        self._started = False  # the first flush is scheduled
        self._ready = False  # mounted, with its first chunk (is_mounted lags in on_mount)
        self.done = bool(text) or interrupted  # all drawn (a saved reply is, from the start)
        self.interrupted = interrupted
        self._parts = [text] if text else []  # everything received, shown or about to be

    @property
    def text(self) -> str:
        if len(self._parts) > 1:  # join lazily: += on a growing string is quadratic
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def compose(self) -> ComposeResult:
        self._composed = True
        if self.thinking is not None:
            yield self.thinking
        start = 0
        for opening, chunk in split_reply(self._initial):
            yield ReplyMarkdown(chunk, reopen=opening,
                                continued=continues(self._initial, start))
            start += len(chunk)
        if self.interrupted:
            self._marked = True
            yield Static("⊘ interrupted", classes="interrupted-mark")

    def on_mount(self) -> None:
        # The app does not wait for this widget to mount: text may already be waiting.
        self._ready = True
        self.mark_joins()
        if self._pending:
            self.call_later(self._flush)

    @property
    def flushing(self) -> bool:
        return self._lock.locked()

    @property
    def live(self) -> ReplyMarkdown | None:
        """The chunk being streamed into (never frozen)."""
        return self._live

    def write(self, text: str) -> None:
        """Take streamed text. Drawing happens in this widget's own time (call_later, timer),
        never in the caller's: the app's message loop stays free for keys."""
        self._parts.append(text)
        self._pending.append(text)
        if not self._started:
            self._started = True
            if self._ready:
                self.call_later(self._flush)  # the first words show at once
        elif self._timer is None and not self._lock.locked():
            self._schedule()  # (a flush in progress schedules the next one when it ends)

    def think(self, text: str) -> None:
        """Streamed reasoning: into the thinking block above the answer."""
        if self.thinking is None:
            self.thinking = ThinkingBlock(live=True)
            if self._composed:
                self.mount(self.thinking, before=0 if self.children else None)
        self.thinking.add(text)

    def _schedule(self) -> None:
        floor = self.FLOOD_FLUSH_EVERY if self._flooded else self.FLUSH_EVERY
        delay = min(self.MAX_FLUSH_EVERY, max(floor, 4 * self._draw_cost))
        self._timer = self.set_timer(delay, self._flush)

    async def _flush(self) -> None:
        # One flush at a time: sealing awaits, and a timer flush may meet finish()'s.
        async with self._lock:
            started = time.perf_counter()
            # One frame for the whole flush: each await of a mount would otherwise let the
            # screen lay out and paint a half-done state (a frame costs a full layout).
            with self.app.batch_update():
                await self._flush_locked()
            self._draw_cost = time.perf_counter() - started
            if self._pending and self._timer is None and not self.done:
                self._schedule()  # text that came while drawing: after a rest
        self.post_message(self.Flushed())  # the transcript freezes what scrolled away

    async def _flush_locked(self) -> None:
        if self._timer is not None:  # this flush takes what it would have
            self._timer.stop()
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
        # Cuts are found in what the live chunk draws (its reopening line, its text, the new
        # text): `done` of it is already drawn and stays in the live chunk.
        source = self._live.drawn_source + text
        done = len(source) - len(text)
        first = max(CHUNK_CHARS, done)
        cuts = chunk_cuts(source, first)
        width = self.content_size.width or 80
        # Only what can be on screen is drawn: text that came faster than it could be drawn
        # and already ends above the last screenful starts frozen, its height estimated (it
        # is drawn if ever scrolled to, a chunk at a time).
        tail = tail_start(source, width, self._view_height(), first, cuts)
        self._flooded = tail is not None and tail > done
        if self._flooded:
            assert tail is not None
            # In spans of many chunks: thousands of widgets would slow every frame.
            ends = spaced([c for c in cuts if c < tail], SPAN_CHARS, done)
            ends.append(tail)
            fences = fence_starts(source)
            await self._seal(source[done:ends[0]], hidden=True,
                             reopening=reopen(source, tail, fences),
                             continued=continues(source, tail))
            hidden = [ReplyMarkdown(source[start:end], reopen=reopen(source, start, fences),
                                    frozen_height=estimate_height(source[start:end], width),
                                    continued=continues(source, start))
                      for start, end in pairwise(ends)]
            if hidden:
                await self.mount_all(hidden, before=self._live)
                self.mark_joins()
            assert self._live is not None
            drawn = self._live.reopen
            source, done = drawn + source[tail:], len(drawn)
            first = max(CHUNK_CHARS, done)
            cuts = chunk_cuts(source, first)
        # The rest is drawn, in chunks of about CHUNK_CHARS.
        start = done
        fences = fence_starts(source)
        for cut in cuts:
            await self._feed(source[start:cut])
            await self._seal(reopening=reopen(source, cut, fences),
                             continued=continues(source, cut))
            start = cut
        await self._feed(source[start:])

    def mark_joins(self) -> None:
        """A chunk followed by one that continues its last block ends with no gap."""
        chunks = list(self.query_children(ReplyMarkdown))
        for chunk, after in pairwise(chunks):
            chunk.set_class(after.has_class("-continued"), "-joined")

    def _view_height(self) -> int:
        """Lines of the reply that can be on screen at once."""
        view = self.parent.size.height if isinstance(self.parent, Widget) else 0
        return view or self.screen.size.height

    async def _feed(self, text: str) -> None:
        """Into the live chunk's stream, FEED_SLICE characters at a time, each appended
        before the next: one huge append would hold the event loop (and the keys) for long."""
        assert self._live is not None and self._stream is not None
        for start in range(0, len(text), FEED_SLICE):
            piece = text[start:start + FEED_SLICE]
            self._live.text += piece
            self._appended.clear()
            await self._stream.write(piece)
            try:
                await asyncio.wait_for(self._appended.wait(), APPEND_WAIT)
            except TimeoutError:
                pass  # drawing is slow, not stuck: go on, the stream batches what follows

    def appended(self) -> None:
        """The live chunk finished an append: the next slice may go."""
        self._appended.set()

    async def _seal(self, rest: str = "", *, hidden: bool = False,
                    reopening: str = "", continued: bool = False) -> None:
        """The live chunk is complete: stop its stream, start a new chunk after it (drawn
        after `reopening`). A hidden one takes `rest` undrawn and freezes at its estimated
        height."""
        assert self._stream is not None and self._live is not None
        await self._stop_stream()
        done = self._live
        if hidden:
            done.text += rest
            await done.freeze(estimate_height(done.drawn_source,
                                              self.content_size.width or 80))
        chunk = ReplyMarkdown(reopen=reopening, continued=continued)
        await self.mount(chunk, after=done)
        self.mark_joins()
        self._live, self._stream = chunk, Markdown.get_stream(chunk)

    async def _stop_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is None:
            return
        try:
            await stream.stop()
        except asyncio.CancelledError:
            # A stream stopped before its task first ran re-raises the cancel it was given;
            # only a cancel of this task itself must go on.
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise

    def finish(self, *, interrupted: bool) -> None:
        """The reply is complete. Returns at once: what is still to draw is drawn in this
        widget's own time, so the app's messages (keys!) never wait behind a long reply."""
        if interrupted:
            self.interrupted = True
        if self.thinking is not None:
            self.thinking.finish()
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.call_later(self._finish)

    async def _finish(self) -> None:
        await self._flush()
        async with self._lock:
            await self._stop_stream()
            self._live = None
        if self.interrupted and not self._marked:
            self._marked = True
            await self.mount(Static("⊘ interrupted — the partial reply is kept",
                                    classes="interrupted-mark"))
        self.done = True
