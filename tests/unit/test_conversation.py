"""The turn loop with a scripted provider and a fake executor: no network, no subprocess."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from tuiapp.conversation.conversation import Approval, Conversation, allow_all, deny_all
from tuiapp.providers.base import Provider, ProviderFailure, StreamEnd, StreamItem
from tuiapp.security import policy
from tuiapp.settings.config_types import ApprovalConfig, ProviderConfig, Rule
from tuiapp.vocab.events import (
    Event,
    MessageAdded,
    ProviderError,
    TextDelta,
    ToolCallDecided,
    ToolFinished,
    TurnEnded,
    Usage,
)
from tuiapp.vocab.messages import Message, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

ECHO = ToolSpec(
    "echo",
    "echo text",
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "keprompt",
    "/x/echo",
)


class Scripted(Provider):
    """Each request pops the next script: a list of items, or an exception to raise."""

    def __init__(self, *scripts: list[Any] | Exception) -> None:
        super().__init__(ProviderConfig("fake", "chat"), "m")
        self.scripts = list(scripts)
        self.requests: list[list[Message]] = []

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str | None
    ) -> AsyncIterator[StreamItem]:
        self.requests.append(list(messages))
        script = self.scripts.pop(0)
        for item in script if isinstance(script, list) else []:
            if isinstance(item, Exception):
                raise item
            if item == "hang":
                await asyncio.sleep(3600)
            yield item
        if isinstance(script, Exception):
            raise script


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.ran: list[ToolCall] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    async def execute(self, spec: ToolSpec, call: ToolCall, emit: Any) -> ToolFinished:
        self.ran.append(call)
        fin = ToolFinished(call.id, call.name, "ok", 0, 5, f"echo: {call.arguments.get('text')}")
        emit(fin)
        return fin

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def conv(
    provider: Provider,
    rec: Recorder,
    approver: Any = allow_all,
    approval: ApprovalConfig | None = None,
    **kw: Any,
) -> Conversation:
    return Conversation(
        provider=provider,
        tools=lambda: {"echo": ECHO},
        approval=lambda: approval or ApprovalConfig(),
        approver=approver,
        executor=rec.execute,
        emit=rec,
        **kw,
    )


def call(text: str = "hi", id: str = "c1") -> ToolCall:
    return ToolCall.from_raw(id, "echo", f'{{"text": "{text}"}}')


async def test_tool_round_trip_and_result_goes_back() -> None:
    p = Scripted(
        [call(), StreamEnd("tool_use")], [TextDelta("done"), Usage(3, 1), StreamEnd("end_turn")]
    )
    rec = Recorder()
    c = conv(p, rec)
    assert await c.turn("please echo") == "end_turn"
    assert [m.role for m in c.history] == ["user", "assistant", "tool", "assistant"]
    assert c.history[2].content == "echo: hi" and c.history[2].tool_call_id == "c1"
    assert p.requests[1][-1].role == "tool"  # the result reached the model
    assert c.usage == Usage(3, 1)
    assert rec.of(TurnEnded)[-1].steps == 2


async def test_deny_rule_and_no_tty_denial_reach_model_as_results() -> None:
    approval = ApprovalConfig(rules=(Rule("echo", "deny", args="secret", origin="t"),))
    p = Scripted(
        [call("secret", "a"), call("fine", "b"), StreamEnd("tool_use")],
        [TextDelta("ok"), StreamEnd("end_turn")],
    )
    rec = Recorder()
    c = conv(p, rec, approver=deny_all, approval=approval)
    await c.turn("x")
    results = [m for m in c.history if m.role == "tool"]
    assert "denied by policy" in results[0].content and results[0].is_error
    assert "no TTY" in results[1].content  # default ask, nobody to answer
    assert rec.ran == []
    assert [d.decision for d in rec.of(ToolCallDecided)] == ["deny", "ask"]


async def test_edited_arguments_are_what_runs() -> None:
    async def edit(c: ToolCall, spec: ToolSpec, v: policy.Verdict) -> Approval:
        return Approval(True, arguments={"text": "edited"})

    p = Scripted([call(), StreamEnd("tool_use")], [StreamEnd("end_turn")])
    rec = Recorder()
    await conv(p, rec, approver=edit).turn("x")
    assert rec.ran[0].arguments == {"text": "edited"}


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        (ToolCall.from_raw("c", "echo", '{"text": '), "not valid JSON"),
        (ToolCall.from_raw("c", "echo", '["a"]'), "must be a JSON object"),
        (ToolCall.from_raw("c", "echo", '{"text": 5}'), "invalid arguments"),
        (ToolCall.from_raw("c", "nope", "{}"), "unknown tool 'nope'"),
    ],
)
async def test_malformed_calls_are_answered_not_run(bad: ToolCall, fragment: str) -> None:
    p = Scripted([bad, StreamEnd("tool_use")], [TextDelta("sorry"), StreamEnd("end_turn")])
    rec = Recorder()
    c = conv(p, rec)
    assert await c.turn("x") == "end_turn"
    assert rec.ran == []
    result = next(m for m in c.history if m.role == "tool")
    assert fragment in result.content and result.is_error


async def test_identical_repeated_calls_are_stopped() -> None:
    scripts = [[call(id=f"c{i}"), StreamEnd("tool_use")] for i in range(5)]
    p = Scripted(*scripts, [TextDelta("ok"), StreamEnd("end_turn")])
    rec = Recorder()
    c = conv(p, rec)
    await c.turn("x")
    assert len(rec.ran) == 2
    assert "already made 2 times" in [m for m in c.history if m.role == "tool"][2].content


async def test_step_limit() -> None:
    scripts = [[call(str(i), f"c{i}"), StreamEnd("tool_use")] for i in range(4)]
    p = Scripted(*scripts)
    rec = Recorder()
    assert await conv(p, rec, max_steps=3).turn("x") == "max_steps"
    assert len(p.requests) == 3


async def test_provider_error_mid_stream_keeps_partial_reply() -> None:
    p = Scripted([TextDelta("half an "), ProviderFailure("connection reset")])
    rec = Recorder()
    c = conv(p, rec)
    assert await c.turn("x") == "error"
    assert c.history[-1] == Message("assistant", "half an ", interrupted=True)
    assert rec.of(ProviderError)[0].partial
    # the user retries: the interrupted reply is dropped from what is sent, history goes on
    p.scripts.append([TextDelta("whole answer"), StreamEnd("end_turn")])
    assert await c.retry() == "end_turn"
    assert [m.content for m in c.history] == ["x", "whole answer"]


async def test_interrupt_keeps_partial_text() -> None:
    p = Scripted([TextDelta("partial"), "hang"])
    rec = Recorder()
    c = conv(p, rec)
    task = asyncio.create_task(c.turn("x"))
    while not rec.of(TextDelta):
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert c.history[-1] == Message("assistant", "partial", interrupted=True)
    assert rec.of(TurnEnded)[-1].stop_reason == "interrupted"
    assert isinstance(rec.of(MessageAdded)[-1].message, Message)


class Firehose(Provider):
    """Text that is always ready: a stream whose reads never suspend (a fast local server)."""

    def __init__(self, count: int) -> None:
        super().__init__(ProviderConfig("fake", "chat"), "m")
        self.count = count

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str | None
    ) -> AsyncIterator[StreamItem]:
        loop = asyncio.get_running_loop()
        for _ in range(self.count):
            busy_until = loop.time() + 0.0002
            while loop.time() < busy_until:
                pass  # parsing an event takes a little CPU; no await: nothing suspends
            yield TextDelta("word ")
        yield StreamEnd("end_turn")


async def test_a_stream_that_never_suspends_still_lets_the_rest_of_the_loop_run() -> None:
    # The UI (keys, drawing) shares the event loop with the stream: a stream whose data is
    # always buffered must still give it turns, or the screen freezes until the reply ends.
    ticks: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        loop = asyncio.get_running_loop()
        while not stop.is_set():
            ticks.append(loop.time())
            await asyncio.sleep(0)

    chat = conv(Firehose(2000), Recorder())
    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    started = len(ticks)
    loop = asyncio.get_running_loop()
    begin = loop.time()
    await chat.turn("go")
    took = loop.time() - begin
    stop.set()
    await task
    during = [t for t in ticks[started:] if begin <= t <= begin + took]
    assert took > 0.3  # the stream itself held the CPU for a while
    gaps = [b - a for a, b in zip([begin, *during], [*during, begin + took], strict=True)]
    assert max(gaps) < 0.1, f"the loop was held for {max(gaps) * 1000:.0f} ms"


async def test_fast_deltas_are_emitted_together_and_slow_ones_without_delay() -> None:
    # A fast stream: every sink (the session's commit, the terminal, the UI) gets a few
    # events, not one per token; the text and its order are unchanged.
    rec = Recorder()
    words = [f"w{i} " for i in range(3000)]
    await conv(Scripted([*(TextDelta(w) for w in words), StreamEnd("end_turn")]), rec).turn("go")
    deltas = rec.of(TextDelta)
    assert "".join(d.text for d in deltas) == "".join(words)
    assert len(deltas) < 100
    kinds = [type(e).__name__ for e in rec.events]
    assert kinds.index("MessageAdded", kinds.index("TextDelta")) > max(
        i for i, k in enumerate(kinds) if k == "TextDelta")  # all text before the message

    # A slow stream: each piece is out long before the next arrives.
    seen_at: list[float] = []

    class Slow(Scripted):
        async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec],
                         system: str | None) -> AsyncIterator[StreamItem]:
            for word in ("one ", "two "):
                yield TextDelta(word)
                await asyncio.sleep(0.3)
                seen_at.append(len(slow_rec.of(TextDelta)))
            yield StreamEnd("end_turn")

    slow_rec = Recorder()
    await conv(Slow(), slow_rec).turn("go")
    assert seen_at == [1, 2]
    assert [d.text for d in slow_rec.of(TextDelta)] == ["one ", "two "]
