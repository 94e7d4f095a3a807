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

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownStream

from tuiapp.ui.widgets.chunking import (
    CHUNK_CHARS,
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
from tuiapp.ui.widgets.reply_chunk import ReplyMarkdown, WarmUp  # noqa: F401 (re-exported)
from tuiapp.ui.widgets.thinking import ThinkingBlock

FEED_SLICE = 600  # characters per Markdown append: its parse and mount run as one step
APPEND_WAIT = 2.0  # seconds to wait for an append before feeding more anyway
FLUSH_MAX = 2_000_000  # characters a flush takes (the rest waits for the next one)
BACKLOG_REST = 0.01  # seconds between two flushes of a flood: keys come first


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
        self._backlog = False  # the last flush left text of a flood for the next one
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
                if self._backlog:  # the rest of a flood: after the keys waiting, if any
                    self._timer = self.set_timer(BACKLOG_REST, self._flush)
                else:
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
        # At most FLUSH_MAX characters a flush, so that no flush holds the keys for long
        # (cutting 10 MB into chunks takes ~50 ms); the rest goes on at the next one, soon.
        self._backlog = len(text) > FLUSH_MAX
        if self._backlog:
            self._pending.append(text[FLUSH_MAX:])
            text = text[:FLUSH_MAX]
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
        if self._backlog and cuts:
            tail = cuts[-1]  # more is coming at once: none of this can end on screen
        self._flooded = tail is not None and tail > done
        if self._flooded:
            assert tail is not None
            # In spans of many chunks: thousands of widgets would slow every frame.
            ends = spaced([c for c in cuts if c < tail], SPAN_CHARS, done)
            ends.append(tail)
            fences = fence_starts(source)
            hidden = [ReplyMarkdown(source[start:end], reopen=reopen(source, start, fences),
                                    frozen_height=estimate_height(source[start:end], width),
                                    continued=continues(source, start))
                      for start, end in pairwise(ends)]
            await self._seal(source[done:ends[0]], hidden=hidden,
                             reopening=reopen(source, tail, fences),
                             continued=continues(source, tail))
            assert self._live is not None
            drawn = self._live.reopen
            source, done = drawn + source[tail:], len(drawn)
            if self._backlog:  # its last piece goes first into the next flush, drawn from there
                self._pending.insert(0, source[done:])
                return
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
            if chunk.has_class("-joined") != after.has_class("-continued"):
                chunk.set_class(after.has_class("-continued"), "-joined")
                chunk.fit_edges()

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

    async def _seal(self, rest: str = "", *, hidden: list[ReplyMarkdown] | None = None,
                    reopening: str = "", continued: bool = False) -> None:
        """The live chunk is complete: stop its stream, start a new chunk after it (drawn
        after `reopening`). With `hidden` (frozen chunks to put between the two), it takes
        `rest` undrawn and freezes at its estimated height."""
        assert self._stream is not None and self._live is not None
        await self._stop_stream()
        done = self._live
        if hidden is not None:
            done.text += rest
            await done.freeze(estimate_height(done.drawn_source,
                                              self.content_size.width or 80))
        chunk = ReplyMarkdown(reopen=reopening, continued=continued)
        # At the end when the live chunk is last (it is while streaming): a mount before or
        # after a child restyles every child (Textual's order-dependent CSS), a cost that
        # grows with the reply.
        last = self.children[-1] if self.children else None
        await self.mount_all([*(hidden or ()), chunk], after=None if last is done else done)
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
        while self._pending and self.is_attached:  # a flood is drawn a FLUSH_MAX at a time
            await asyncio.sleep(BACKLOG_REST)
            await self._flush()
        async with self._lock:
            await self._stop_stream()
            self._live = None
        if self.interrupted and not self._marked:
            self._marked = True
            await self.mount(Static("⊘ interrupted — the partial reply is kept",
                                    classes="interrupted-mark"))
        self.done = True
