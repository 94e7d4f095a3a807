"""The conversation as the user reads it: their messages, kep's replies (streamed through
MarkdownStream, never re-rendered whole per token), tool-call blocks, errors and notices."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Button, Static

from tuiapp.conversation.store import ToolCallRecord
from tuiapp.security.display import StreamPrintable, printable
from tuiapp.ui.widgets.call_batch import SHOWN, CallBatchLine
from tuiapp.ui.widgets.history_blocks import page_start, restored_block, screenful_start
from tuiapp.ui.widgets.tool_block import ToolCallBlock
from tuiapp.vocab.events import (
    Event,
    MessageAdded,
    Notice,
    ProviderError,
    ReasoningDelta,
    Retrying,
    ToolCallDecided,
    ToolCallQueued,
    ToolCallRequested,
    ToolCallStarted,
    ToolFinished,
    TurnEnded,
)
from tuiapp.vocab.messages import Message

if TYPE_CHECKING:
    from tuiapp.ui.widgets.reply import AssistantReply, ReplyMarkdown


class UserMessage(Static):
    def __init__(self, text: str) -> None:
        super().__init__(Content(printable(text)), classes="user-message")


class ErrorBlock(Vertical):
    def __init__(self, message: str, *, partial: bool) -> None:
        super().__init__(classes="error-block")
        self.message = message
        self.partial = partial

    def compose(self) -> ComposeResult:
        # (A partial reply above is already marked "interrupted — kept".)
        yield Static(Content.assemble(("✗ The model request failed: ", "bold"),
                                      printable(self.message)),
                     classes="error-text")
        with Horizontal(classes="error-actions"):
            yield Button("Retry  ctrl+r", action="app.retry", compact=True, classes="retry")


class NoticeLine(Static):
    def __init__(self, text: str, level: str = "info") -> None:
        super().__init__(Content(printable(text)), classes=f"notice -{level}")


def _reply() -> ModuleType:
    """widgets.reply, imported on first use: Markdown brings markdown-it (~25 ms), which the
    first frame does not need."""
    from tuiapp.ui.widgets import reply

    return reply


def _is_live(chunk: ReplyMarkdown) -> bool:
    """Still being streamed into (its reply may be finishing after the turn ended)."""
    reply = chunk.parent
    return getattr(reply, "live", None) is chunk


VIRTUALIZE_AFTER = 0.1  # seconds after a scroll, resize or drawn text
HISTORY_TAIL = 24  # messages drawn when a session is resumed (a few screens)
HISTORY_PAGE = 200  # drawn per request for earlier ones
PREFETCH_AFTER = 1.0  # seconds of stillness before chunks near the view are drawn
WARM_UP_AFTER = 0.5  # seconds after start: the first frame and the tool listing come first


class Transcript(VerticalScroll):
    """Routes core events to the right block. Blocks are keyed by call id (the newest wins:
    some models reuse ids across turns)."""

    def __init__(self, **kwargs: str) -> None:
        super().__init__(**kwargs)
        self._reply: AssistantReply | None = None
        self._blocks: dict[str, ToolCallBlock] = {}
        self._in_reply = 0  # tool-call blocks drawn for the current reply
        self._batch: CallBatchLine | None = None  # the calls past SHOWN, counted
        self._virtualize_timer: Timer | None = None
        self._prefetch_timer: Timer | None = None
        self._drawing: list[AssistantReply] = []  # replies not yet mounted and drawn
        self._clean = StreamPrintable()  # the display edge for streamed model text
        # A resumed session: (messages, call records by message index, tool results by id).
        self._history: tuple[Sequence[Message], dict[int, list[ToolCallRecord | None]],
                             dict[str | None, Message]] = ((), {}, {})
        self._compacted_below = 0  # its messages above this index were compacted

    def on_mount(self) -> None:
        self.anchor()
        self.set_timer(WARM_UP_AFTER, self._warm_up)

    def _warm_up(self) -> None:
        if self._reply is None:  # a reply already streaming has paid the cost
            self.mount(_reply().WarmUp())

    # ---- keeping the layout small: freeze what is far out of view ----------------------

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        self.schedule_virtualize()

    def on_resize(self) -> None:
        self.schedule_virtualize()

    def on_assistant_reply_flushed(self) -> None:
        self.schedule_virtualize()

    def schedule_virtualize(self) -> None:
        if self._virtualize_timer is None:
            # After the pending layout: regions must be those of what is on screen now.
            self._virtualize_timer = self.set_timer(
                VIRTUALIZE_AFTER, lambda: self.call_after_refresh(self._virtualize))
        if self._prefetch_timer is not None:  # still moving: prefetch when it settles
            self._prefetch_timer.reset()

    async def _virtualize(self, prefetch: bool = False) -> None:
        """Thaw the frozen reply chunks in view; freeze the ones more than a screen away.
        Chunks near the view (within a screen) are thawed too, but only once the transcript
        has been still for PREFETCH_AFTER: thawing costs layout time that a stream, a scroll
        or the keyboard should not wait for. A frozen chunk keeps its height, so scrolling
        and the scrollbar are unchanged."""
        self._virtualize_timer = None
        if prefetch:
            self._prefetch_timer = None
        if any(reply.flushing for reply in self.query(_reply().AssistantReply)):
            # Mid-flush the layout is held back (one frame per flush): regions are stale.
            self.schedule_virtualize()
            return
        view = self.region
        if not view.height:
            return
        top, bottom = view.y - view.height, view.bottom + view.height
        # Following a reply as it streams (at the bottom): its text above the view is still
        # settling (heights estimated, chunks being drawn); thaw only what the user scrolls to.
        following = self.scroll_y >= self.max_scroll_y - 1
        for chunk in self.query(".reply-chunk").results(_reply().ReplyMarkdown):
            region = chunk.region
            if not region.height:
                if chunk.text:
                    self.schedule_virtualize()  # not laid out yet: look again later
                continue
            near = region.bottom >= top and region.y <= bottom
            if chunk.frozen and near:
                if following and not getattr(chunk.parent, "done", True):
                    continue  # settling
                if prefetch or (region.bottom > view.y and region.y < view.bottom):
                    await chunk.thaw()
                    if chunk.frozen:  # a span split into chunks: look at those next
                        self.schedule_virtualize()
                elif self._prefetch_timer is None:
                    self._prefetch_timer = self.set_timer(
                        PREFETCH_AFTER, lambda: self.call_after_refresh(self._virtualize, True))
            elif not chunk.frozen and not near and not _is_live(chunk):
                await chunk.freeze()

    # Mounts below are not awaited: the app calls these from its message handlers, and its
    # queue (keys included) must not wait for the transcript's layout. Widgets queue what
    # they are told until they are mounted.

    async def add(self, widget: Widget) -> None:
        await self.mount(widget)

    def add_user(self, text: str) -> None:
        self.anchor()  # a new message brings the view back to the bottom
        self.mount(UserMessage(text))

    def stream_text(self, text: str) -> None:
        text = self._clean(text)
        if not text:
            return
        if self._reply is None:
            self._new_reply()
        self._reply.write(text)
        self.schedule_virtualize()

    @property
    def streaming(self) -> bool:
        return self._reply is not None

    def block(self, call_id: str) -> ToolCallBlock | None:
        return self._blocks.get(call_id)

    def handle(self, event: Event) -> None:
        if isinstance(event, ReasoningDelta):
            if self._reply is None:
                self._new_reply()
            self._reply.think(event.text)
        elif isinstance(event, MessageAdded):
            self._message_added(event.message)
        elif self._batched(event):
            return
        elif isinstance(event, ToolCallRequested):
            block = ToolCallBlock(event.call, event.source)
            self._blocks[event.call.id] = block
            self._in_reply += 1
            self.mount(block)
        elif isinstance(event, ToolCallDecided):
            if block := self._blocks.get(event.call_id):
                block.decided(event)
        elif isinstance(event, ToolCallQueued):
            if block := self._blocks.get(event.call_id):
                block.queued()
        elif isinstance(event, ToolCallStarted):
            if block := self._blocks.get(event.call_id):
                block.running()
        elif isinstance(event, ToolFinished):
            if block := self._blocks.get(event.call_id):
                block.finished(event)
        elif isinstance(event, ProviderError):
            self.end_reply(interrupted=event.partial)
            self.mount(ErrorBlock(event.message, partial=event.partial))
        elif isinstance(event, Retrying):
            self.mount(NoticeLine(
                f"↻ retrying in {event.delay:g} s (attempt {event.attempt}): {event.reason}"))
        elif isinstance(event, Notice):
            self.mount(NoticeLine(event.text, event.level))
        elif isinstance(event, TurnEnded) and event.stop_reason == "interrupted":
            self.end_reply(interrupted=True)

    def _batched(self, event: Event) -> bool:
        """Calls of one reply past SHOWN go to one counting line (see call_batch)."""
        if isinstance(event, ToolCallRequested):
            if self._in_reply < SHOWN or event.call.id in self._blocks:
                return False
            if self._batch is None:
                self._batch = CallBatchLine()
                self.mount(self._batch)
            self._batch.set(event.call.id, "requested")
            return True
        call_id = getattr(event, "call_id", None)
        if self._batch is None or call_id not in self._batch or call_id in self._blocks:
            return False
        if isinstance(event, ToolCallQueued):
            self._batch.set(call_id, "queued")
        elif isinstance(event, ToolCallStarted):
            self._batch.set(call_id, "running")
        elif isinstance(event, ToolFinished):
            self._batch.set(call_id, event.status)
        elif isinstance(event, ToolCallDecided) and (event.decision == "deny"
                                                     or event.approved is False):
            self._batch.set(call_id, "denied")
        return True

    def _message_added(self, message: Message) -> None:
        if message.summary_keeps is not None:  # a compaction: the context restarts here
            from tuiapp.ui.widgets.compacted import CompactedMarker, dim_above

            dim_above(self)
            self.mount(CompactedMarker(message))
        elif message.role == "user":
            self.add_user(message.with_chips())
        elif message.role == "assistant":
            self._in_reply, self._batch = 0, None  # its tool calls come next
            if self._reply is None and (message.content or message.interrupted):
                # A provider that did not stream, or an interrupt before the first token.
                self._new_reply(message.content)
            self.end_reply(interrupted=message.interrupted)

    def _new_reply(self, text: str = "") -> None:
        self._reply = reply = _reply().AssistantReply(printable(text))
        self._drawing.append(reply)
        self.mount(reply)

    @property
    def drawn(self) -> bool:
        """Every reply is mounted and fully drawn (tests and benchmarks wait for this)."""
        self._drawing = [r for r in self._drawing if not (r.is_mounted and r.done)]
        return not self._drawing

    def end_reply(self, *, interrupted: bool) -> None:
        reply, self._reply = self._reply, None
        self._clean = StreamPrintable()
        if reply is not None:
            reply.finish(interrupted=interrupted)
            self.schedule_virtualize()

    async def show_history(self, messages: Sequence[Message],
                           records: dict[int, list[ToolCallRecord | None]] | None = None) -> None:
        """Draw a resumed session: messages as they were, each call as it ended. Only the
        newest HISTORY_TAIL messages at first (a 10,000-message session must open at once);
        a line on top draws earlier ones, a page at a time. A screenful of them comes first."""
        self._history = (messages, records or {}, {m.tool_call_id: m for m in messages
                                                   if m.role == "tool"})
        # Messages above the last compaction marker: replaced in the model's context, dimmed.
        self._compacted_below = max((i for i, m in enumerate(messages)
                                     if m.summary_keeps is not None), default=0)
        start = page_start(messages, len(messages) - HISTORY_TAIL)
        width, rows = self.app.size  # the transcript is not laid out yet
        first = max(start, screenful_start(messages, len(messages), rows, width - 4))
        tail = self._history_widgets(first, len(messages))
        widgets = list(tail) if tail else self._history_widgets(start, first)
        if start:
            widgets.insert(0, EarlierMessages(start))
        if widgets:
            await self.mount_all(widgets)
        self.anchor()
        if tail and start < first:  # the rest of the tail: once the newest screen is out
            self.call_after_refresh(self._draw_before, tail[0], start, first)

    async def _draw_before(self, widget: Widget, start: int, end: int) -> None:
        if widget.parent is self:  # (not after a session switch)
            await self.mount_all(self._history_widgets(start, end), before=widget)

    def _history_widgets(self, start: int, end: int) -> list[Widget]:
        messages, records, results = self._history
        widgets: list[Widget] = []
        for i in range(start, end):
            first = len(widgets)
            m = messages[i]
            if m.summary_keeps is not None:
                widgets.append(import_module("tuiapp.ui.widgets.compacted").CompactedMarker(m))
            elif m.role == "user":
                widgets.append(UserMessage(m.with_chips()))
            elif m.role == "assistant":
                thought = m.reasoning.text if m.reasoning else ""
                if m.content or m.interrupted or thought:
                    widgets.append(_reply().AssistantReply(printable(m.content),
                                                           interrupted=m.interrupted,
                                                           thinking=printable(thought)))
                recs = records.get(i, [])
                for j, call in enumerate(m.tool_calls):
                    rec = recs[j] if j < len(recs) else None
                    widgets.append(restored_block(call, rec, results.get(call.id)))
            for w in widgets[first:]:
                w.add_class(f"message-{i}")  # a search hit scrolls to its message
            if i < self._compacted_below:
                import_module("tuiapp.ui.widgets.compacted").dim_above(widgets, since=first)
        return widgets

    async def show_earlier(self, marker: EarlierMessages) -> None:
        """Draw the page of messages before `marker.count`, just below the marker."""
        end = marker.count
        start = page_start(self._history[0], end - HISTORY_PAGE)
        widgets = self._history_widgets(start, end)
        if widgets:
            await self.mount_all(widgets, after=marker)
        if start:
            marker.set_count(start)
        else:
            await marker.remove()

    async def clear(self) -> None:
        self._reply = None
        self._blocks.clear()
        await self.remove_children()


class EarlierMessages(Static):
    """The first line of a long resumed session: how much is not drawn yet. Enter or a click
    draws the previous page."""

    can_focus = True
    BINDINGS: ClassVar[list[BindingType]] = [
        ("enter", "show_earlier", "Show earlier messages")]

    def __init__(self, count: int) -> None:
        super().__init__(classes="earlier-messages")
        self._busy = False  # a second click while a page is being drawn would draw it twice
        self.set_count(count)

    def set_count(self, count: int) -> None:
        self.count = count
        more = min(count, HISTORY_PAGE)
        self.update(Content.assemble(
            (f"▲ {count:,} earlier message{'s' if count != 1 else ''}", "bold"),
            f" — enter or click to show {more:,} more"))

    async def action_show_earlier(self) -> None:
        if self._busy or not isinstance(self.parent, Transcript):
            return
        self._busy = True
        try:
            await self.parent.show_earlier(self)
        finally:
            self._busy = False

    async def on_click(self) -> None:
        await self.action_show_earlier()
