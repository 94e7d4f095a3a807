"""The conversation as the user reads it: their messages, kep's replies (streamed through
MarkdownStream, never re-rendered whole per token), tool-call blocks, errors and notices."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Button, Markdown, Static
from textual.widgets.markdown import MarkdownFence, MarkdownStream

from tuiapp.core.events import (
    Event,
    MessageAdded,
    Notice,
    ProviderError,
    Retrying,
    ToolCallDecided,
    ToolCallRequested,
    ToolCallStarted,
    ToolFinished,
    TurnEnded,
)
from tuiapp.core.messages import Message, ToolCall
from tuiapp.core.store import ToolCallRecord
from tuiapp.ui.widgets.tool_block import ToolCallBlock, first_line


class PlainFence(MarkdownFence):
    """A code block without a language is shown as plain text. Textual would otherwise ask
    Pygments to guess the language, which loads every lexer (~0.5 s) and runs again each
    time a streamed code block grows."""

    @classmethod
    def highlight(cls, code: str, language: str, ansi: bool = False,
                  dark: bool = False) -> Content:
        return super().highlight(code, language or "text", ansi, dark)


class ReplyMarkdown(Markdown):
    BLOCKS = {**Markdown.BLOCKS, "fence": PlainFence, "code_block": PlainFence}  # noqa: RUF012


class UserMessage(Static):
    def __init__(self, text: str) -> None:
        super().__init__(Content(text), classes="user-message")


class AssistantReply(Vertical):
    """A reply. While streaming, text goes through one MarkdownStream, which batches fragments
    so the widget parses only what is new, at most once per frame."""

    def __init__(self, text: str = "", *, interrupted: bool = False) -> None:
        super().__init__(classes="assistant-reply")
        self._initial = text
        self._stream: MarkdownStream | None = None
        self.interrupted = interrupted
        self.text = text

    def compose(self) -> ComposeResult:
        yield ReplyMarkdown(self._initial or None)
        if self.interrupted:
            yield Static("⊘ interrupted", classes="interrupted-mark")

    async def write(self, text: str) -> None:
        if self._stream is None:
            self._stream = Markdown.get_stream(self.query_one(ReplyMarkdown))
        self.text += text
        await self._stream.write(text)

    async def finish(self, *, interrupted: bool) -> None:
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        if interrupted and not self.interrupted:
            self.interrupted = True
            await self.mount(Static("⊘ interrupted — the partial reply is kept",
                                    classes="interrupted-mark"))


class ErrorBlock(Vertical):
    def __init__(self, message: str, *, partial: bool) -> None:
        super().__init__(classes="error-block")
        self.message = message
        self.partial = partial

    def compose(self) -> ComposeResult:
        kept = " The partial reply above is kept." if self.partial else ""
        yield Static(Content.assemble(("✗ The model request failed: ", "bold"), self.message,
                                      kept), classes="error-text")
        with Horizontal(classes="error-actions"):
            yield Button("Retry  ctrl+r", action="app.retry", compact=True, classes="retry")


class NoticeLine(Static):
    def __init__(self, text: str, level: str = "info") -> None:
        super().__init__(Content(text), classes=f"notice -{level}")


class Transcript(VerticalScroll):
    """Routes core events to the right block. Blocks are keyed by call id (the newest wins:
    some models reuse ids across turns)."""

    def __init__(self, **kwargs: str) -> None:
        super().__init__(**kwargs)
        self._reply: AssistantReply | None = None
        self._blocks: dict[str, ToolCallBlock] = {}

    def on_mount(self) -> None:
        self.anchor()

    async def add(self, widget: Widget) -> None:
        await self.mount(widget)

    async def add_user(self, text: str) -> None:
        self.anchor()  # a new message brings the view back to the bottom
        await self.mount(UserMessage(text))

    async def stream_text(self, text: str) -> None:
        if not text:
            return
        if self._reply is None:
            self._reply = AssistantReply()
            await self.mount(self._reply)
        await self._reply.write(text)

    @property
    def streaming(self) -> bool:
        return self._reply is not None

    def block(self, call_id: str) -> ToolCallBlock | None:
        return self._blocks.get(call_id)

    async def handle(self, event: Event) -> None:
        if isinstance(event, MessageAdded):
            await self._message_added(event.message)
        elif isinstance(event, ToolCallRequested):
            block = ToolCallBlock(event.call, event.source)
            self._blocks[event.call.id] = block
            await self.mount(block)
        elif isinstance(event, ToolCallDecided):
            if block := self._blocks.get(event.call_id):
                block.decided(event)
        elif isinstance(event, ToolCallStarted):
            if block := self._blocks.get(event.call_id):
                block.running()
        elif isinstance(event, ToolFinished):
            if block := self._blocks.get(event.call_id):
                block.finished(event)
        elif isinstance(event, ProviderError):
            await self.end_reply(interrupted=event.partial)
            await self.mount(ErrorBlock(event.message, partial=event.partial))
        elif isinstance(event, Retrying):
            await self.mount(NoticeLine(
                f"↻ retrying in {event.delay:g} s (attempt {event.attempt}): {event.reason}"))
        elif isinstance(event, Notice):
            await self.mount(NoticeLine(event.text, event.level))
        elif isinstance(event, TurnEnded) and event.stop_reason == "interrupted":
            await self.end_reply(interrupted=True)

    async def _message_added(self, message: Message) -> None:
        if message.role == "user":
            await self.add_user(message.content)
        elif message.role == "assistant":
            if self._reply is None and (message.content or message.interrupted):
                # A provider that did not stream, or an interrupt before the first token.
                self._reply = AssistantReply(message.content)
                await self.mount(self._reply)
            await self.end_reply(interrupted=message.interrupted)

    async def end_reply(self, *, interrupted: bool) -> None:
        reply, self._reply = self._reply, None
        if reply is not None:
            await reply.finish(interrupted=interrupted)

    async def show_history(self, messages: Sequence[Message],
                           records: dict[int, list[ToolCallRecord | None]] | None = None) -> None:
        """Draw a resumed session: messages as they were, each call as it ended."""
        results = {m.tool_call_id: m for m in messages if m.role == "tool"}
        widgets: list[Widget] = []
        for i, m in enumerate(messages):
            if m.role == "user":
                widgets.append(UserMessage(m.content))
            elif m.role == "assistant":
                if m.content or m.interrupted:
                    widgets.append(AssistantReply(m.content, interrupted=m.interrupted))
                recs = (records or {}).get(i, [])
                for j, call in enumerate(m.tool_calls):
                    rec = recs[j] if j < len(recs) else None
                    widgets.append(_restored_block(call, rec, results.get(call.id)))
        if widgets:
            await self.mount_all(widgets)
        self.anchor()

    async def clear(self) -> None:
        self._reply = None
        self._blocks.clear()
        await self.remove_children()


def _restored_block(call: ToolCall, rec: ToolCallRecord | None,
                    result: Message | None) -> ToolCallBlock:
    block = ToolCallBlock(call)
    if rec is not None:
        status = rec.status if rec.status != "running" else "interrupted"
        detail = f"denied by you: {rec.reason}" if rec.status == "denied" and rec.reason else ""
        if status in ("failed", "timed_out") and rec.result:
            detail = first_line(rec.result)
        block.restore(status, rec.exit_code, rec.duration_ms, detail)
    elif result is not None:
        block.restore("failed" if result.is_error else "ok", None, None,
                      first_line(result.content) if result.is_error else "")
    else:
        block.restore("interrupted", None, None, "")
    return block
