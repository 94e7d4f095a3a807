"""The turn loop: stream the model, decide and run its tool calls, send results back, repeat."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from tuiapp.conversation import compaction
from tuiapp.providers.base import Provider, ProviderFailure, StreamEnd, stream_with_retries
from tuiapp.security import policy
from tuiapp.security.approval_flow import (
    Approval,
    Approver,
    Cleared,
    HookRunner,
    background,
    clear,
)
from tuiapp.settings.config_types import ApprovalConfig, ToolsConfig
from tuiapp.tools.offer import offered, too_big
from tuiapp.tools.schema import arguments_error
from tuiapp.vocab.events import (
    UNFINISHED_STOPS,
    Compacted,
    ContextUsed,
    Event,
    MessageAdded,
    Notice,
    ProviderError,
    ReasoningDelta,
    Retrying,
    TextDelta,
    ToolCallForeseen,
    ToolCallRequested,
    ToolFinished,
    TurnEnded,
    TurnStarted,
    Usage,
)
from tuiapp.vocab.messages import Attachment, Message, Reasoning, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

# A call identical to one already made this many times in the same turn is not run again.
REPEAT_LIMIT = 2
AFTER_TOOL_RESULT = 64 * 1024  # characters of a result an after_tool hook is given
FAIR_SLICE = 0.002  # seconds a stream may hold the event loop before yielding
TEXT_BATCH = 0.02  # seconds of text deltas emitted as one event
PAUSE_LIMIT = 3  # pause_turn continuations kep makes by itself in one turn
FORESEEN = 100  # calls of a reply whose rule verdicts are listed up front

Emit = Callable[[Event], None]


class Executor(Protocol):
    def __call__(self, spec: ToolSpec, call: ToolCall, emit: Emit) -> Awaitable[ToolFinished]: ...


async def deny_all(call: ToolCall, spec: ToolSpec, verdict: policy.Verdict) -> Approval:
    return Approval(False, "no one is there to approve it (no TTY); run with --yes to allow",
                    unattended=True)


async def allow_all(call: ToolCall, spec: ToolSpec, verdict: policy.Verdict) -> Approval:
    return Approval(True)


@dataclass
class Conversation:
    provider: Provider
    tools: Callable[[], Mapping[str, ToolSpec]]  # read at every request: hot reload applies
    approval: Callable[[], ApprovalConfig]  # likewise for config reload
    approver: Approver
    executor: Executor
    emit: Emit
    system: Callable[[], str | None] = lambda: None
    max_steps: int = 25
    history: list[Message] = field(default_factory=list)
    env: Mapping[str, str] = field(default_factory=dict)  # for LLM_MCP_*_CONFIRM
    usage: Usage = field(default_factory=Usage)
    allow_only: Callable[[str], bool] | None = None  # `.functions` allow-list of a prompt
    # [tools] bounds: include/exclude, description cap, max_offered, max_calls_per_reply.
    tool_settings: Callable[[], ToolsConfig] = ToolsConfig
    # An answer the user gave for a call before it was reached (the TUI's "deny all").
    standing: Callable[[str], Approval | None] | None = None
    context: ContextUsed | None = None  # of the last request that reported usage
    # Share of the context window that starts an automatic compaction (>= 1: never).
    compact_at: Callable[[], float] = lambda: compaction.THRESHOLD
    hooks: HookRunner | None = None  # [[hooks]] (tools/hooks.py)

    def __post_init__(self) -> None:
        self._warned = False  # an oversized offer is warned about once
        self._text: list[str] = []  # deltas not yet emitted (see _text_delta)
        self._text_timer: asyncio.TimerHandle | None = None
        self._thinking = False  # the deltas in _text are reasoning

    def _text_delta(self, text: str, thinking: bool = False) -> None:
        """Deltas that arrive within TEXT_BATCH of each other are emitted as one: a fast
        model sends thousands a second, and every sink (the session record's commit, the
        terminal, the UI) pays per event. A slow stream's text still goes out within
        TEXT_BATCH, and always before the next other event. Reasoning is batched likewise."""
        if thinking != self._thinking:
            self._flush_text()
            self._thinking = thinking
        self._text.append(text)
        if self._text_timer is None:
            self._text_timer = asyncio.get_running_loop().call_later(TEXT_BATCH,
                                                                     self._flush_text)

    def _flush_text(self) -> None:
        if self._text_timer is not None:
            self._text_timer.cancel()
            self._text_timer = None
        if self._text:
            text = "".join(self._text)
            self._text.clear()
            self.emit(ReasoningDelta(text) if self._thinking else TextDelta(text))

    def _add(self, message: Message) -> None:
        self._flush_text()
        self.history.append(message)
        self.emit(MessageAdded(message))

    def visible_tools(self) -> dict[str, ToolSpec]:
        tools = dict(self.tools())
        if self.allow_only is not None:
            tools = {k: v for k, v in tools.items() if self.allow_only(k)}
        return offered(tools, self.tool_settings())

    async def turn(self, text: str, images: Sequence[str] = (),
                   attachments: Sequence[Attachment] = ()) -> str:
        """Add a user message (with what its `@` mentions attached: conversation.mentions)
        and run the loop. Returns the stop reason."""
        self.emit(TurnStarted(text))
        if self.hooks is not None:
            background(self.hooks.fire("user_prompt", {"prompt": text}))
        self._add(Message("user", text, images=tuple(images),
                          attachments=tuple(attachments)))
        return await self.run_loop()

    async def retry(self) -> str:
        """Run the loop again after a failure; a trailing interrupted reply is dropped first
        (it stays in the session record)."""
        if self.history and self.history[-1].role == "assistant" and self.history[-1].interrupted:
            self.history.pop()
        return await self.run_loop()

    async def run_loop(self) -> str:
        seen: Counter[str] = Counter()
        steps = pauses = 0
        while True:
            if steps >= self.max_steps:
                self.emit(Notice(f"stopped after {steps} model requests (max_steps)", "warning"))
                self.emit(TurnEnded("max_steps", steps))
                return "max_steps"
            steps += 1
            fraction = self.context.fraction if self.context is not None else None
            if fraction is not None and fraction >= self.compact_at():
                await self.compact(automatic=True)
            outcome = await self._step()
            if outcome == "pause_turn" and pauses < PAUSE_LIMIT:
                pauses += 1  # the API paused a long turn: sending it back lets it go on
                continue
            if isinstance(outcome, str):
                if outcome in UNFINISHED_STOPS:
                    self.emit(Notice(UNFINISHED_STOPS[outcome], "warning"))
                self.emit(TurnEnded(outcome, steps))
                return outcome
            await self._run_calls(outcome, seen)

    async def compact(self, *, automatic: bool = False) -> bool:
        """Summarise the conversation before the turn in progress (conversation.compaction);
        the summary takes its place in the context. A failure is a notice: the conversation
        goes on as it was."""
        self._flush_text()
        cut = compaction.cut_point(self.history)
        if cut == 0:
            if not automatic:
                self.emit(Notice("nothing to compact yet", "info"))
            return False
        tokens = self.context.tokens if self.context is not None else None
        try:
            summary = await compaction.summarise(self.provider, self.history[:cut],
                                                 self.provider.context_window())
        except ProviderFailure as e:
            self.emit(Notice(f"compaction failed: {e.message}; nothing was changed", "warning"))
            return False
        kept = len(self.history) - cut
        message = compaction.summary_message(summary, kept)
        self.history[:] = [message, *self.history[cut:]]
        self.context = None  # measured again by the next request
        self.emit(MessageAdded(message))
        self.emit(Compacted(cut, kept, summary, tokens, automatic))
        return True

    async def _step(self) -> list[ToolCall] | str:
        """One model request. Returns the tool calls to run, or a stop reason."""
        tools = self.visible_tools()
        if not self._warned and (warning := too_big(tools, self.tool_settings())):
            self._warned = True
            self.emit(Notice(warning, "warning"))
        text: list[str] = []
        calls: list[ToolCall] = []
        reasoning: Reasoning | None = None
        stop = "end_turn"
        loop = asyncio.get_running_loop()
        slice_end = loop.time() + FAIR_SLICE
        try:
            async for item in stream_with_retries(
                self.provider, self.history, list(tools.values()), self.system()
            ):
                if loop.time() > slice_end:
                    # A fast stream whose data is always buffered never suspends: give the
                    # rest of the loop (the UI, the keyboard) a turn every FAIR_SLICE.
                    await asyncio.sleep(0)
                    slice_end = loop.time() + FAIR_SLICE
                if isinstance(item, TextDelta):
                    text.append(item.text)
                    self._text_delta(item.text)
                elif isinstance(item, ReasoningDelta):
                    self._text_delta(item.text, thinking=True)
                elif isinstance(item, ToolCall):
                    calls.append(item)
                elif isinstance(item, Reasoning):
                    reasoning = item
                elif isinstance(item, Usage):
                    cost = self.provider.cost(item)
                    self.usage += Usage(item.input_tokens, item.output_tokens,
                                        item.cached_tokens, item.reasoning_tokens, cost)
                    self._flush_text()
                    self.emit(self.usage)
                    if item.input_tokens:
                        self.context = ContextUsed(item.input_tokens,
                                                   self.provider.context_window())
                        self.emit(self.context)
                elif isinstance(item, (Retrying, Notice)):
                    self._flush_text()
                    self.emit(item)
                elif isinstance(item, StreamEnd):
                    stop = item.stop_reason
        except ProviderFailure as e:
            self._flush_text()  # streamed reasoning goes before the error, not after it
            partial = "".join(text)
            if partial:
                self._add(Message("assistant", partial, interrupted=True))
            self.emit(ProviderError(e.message, partial=bool(partial)))
            return "error"
        except asyncio.CancelledError:
            # Esc: keep what arrived, marked interrupted, and let the cancel go on.
            self._add(Message("assistant", "".join(text), interrupted=True))
            self.emit(TurnEnded("interrupted"))
            raise
        self._add(Message("assistant", "".join(text), tool_calls=tuple(calls),
                          reasoning=reasoning))
        if not calls:
            return stop if stop != "tool_use" else "end_turn"
        return calls

    async def _run_calls(self, calls: list[ToolCall], seen: Counter[str]) -> None:
        tools = self.visible_tools()
        pending: list[Awaitable[ToolFinished]] = []
        most = self.tool_settings().max_calls_per_reply
        # Beside the first call, not before it: a slow rule never delays the first question.
        foresee = asyncio.ensure_future(self._foresee(calls[:min(most, FORESEEN)], tools))
        try:
            await self._clear_all(calls, tools, seen, most, pending)
        finally:
            foresee.cancel()
        results = await asyncio.gather(*pending)
        for call, fin in zip(calls, results, strict=True):
            if self.hooks is not None:
                background(self.hooks.fire("after_tool", {
                    "tool": call.name, "call_id": call.id, "arguments": call.arguments,
                    "status": fin.status, "result": fin.result[:AFTER_TOOL_RESULT]}))
            self._add(
                Message(
                    "tool",
                    fin.result,
                    tool_call_id=call.id,
                    name=call.name,
                    is_error=fin.status != "ok",
                    tool_images=fin.images,
                )
            )

    async def _clear_all(self, calls: list[ToolCall], tools: Mapping[str, ToolSpec],
                         seen: Counter[str], most: int,
                         pending: list[Awaitable[ToolFinished]]) -> None:
        """Decide each call in order; approved ones start at once (into `pending`)."""
        for i, call in enumerate(calls):
            spec = tools.get(call.name)
            self.emit(
                ToolCallRequested(call, spec.source if spec else "", spec.format if spec else "")
            )
            refusal = (
                self._refusal(call, spec, tools, seen)
                if i < most
                else f"refused: this reply asked for {len(calls)} tool calls and kep runs at "
                f"most {most} per reply ([tools] max_calls_per_reply); this call was not run. "
                "Ask for fewer calls at a time."
            )
            if refusal is not None:
                pending.append(_done(self._finish_error(call, refusal)))
                continue
            assert spec is not None
            outcome = await clear(call, spec, approval=self.approval, env=self.env,
                                  approver=self.approver, current=self._current, emit=self.emit,
                                  standing=self.standing, hooks=self.hooks)
            if not isinstance(outcome, Cleared):
                pending.append(_done(self._finish(call, outcome.status, outcome.result)))
                continue
            call, spec = outcome.call, outcome.spec
            # Approved calls start at once and run side by side; results keep call order.
            pending.append(asyncio.ensure_future(self.executor(spec, call, self.emit)))

    async def _foresee(self, calls: list[ToolCall], tools: Mapping[str, ToolSpec]) -> None:
        """Say up front what the rules make of each call (ToolCallForeseen)."""
        known = [(c, tools[c.name]) for c in calls if c.name in tools and not c.arguments_error]
        if len(known) < 2:
            return  # one call: its own decision comes at once
        approval = self.approval()

        def decide_all() -> list[tuple[str, policy.Verdict]]:
            return [(c.id, policy.decide(c, approval, self.env, spec=s)) for c, s in known]

        for call_id, verdict in await asyncio.to_thread(decide_all):
            self.emit(ToolCallForeseen(call_id, verdict.action, verdict.rule))

    def _current(self, name: str) -> ToolSpec | None:
        return self.visible_tools().get(name)

    def _refusal(
        self,
        call: ToolCall,
        spec: ToolSpec | None,
        tools: Mapping[str, ToolSpec],
        seen: Counter[str],
    ) -> str | None:
        if spec is None:
            names = ", ".join(sorted(tools)) or "none"
            return f"unknown tool {call.name!r}; available tools: {names}"
        if call.arguments_error:
            return f"{call.arguments_error}. Call {call.name} again with a JSON object."
        problem = arguments_error(spec.parameters, call.arguments)
        if problem:
            return f"invalid arguments for {call.name}: {problem}. Nothing was run."
        key = f"{call.name}\0{call.canonical_arguments()}"
        seen[key] += 1
        if seen[key] > REPEAT_LIMIT:
            return (
                f"this exact call ({call.name} with the same arguments) was already made "
                f"{REPEAT_LIMIT} times in this turn; it was not run again. Use the earlier "
                "result, change the arguments, or answer the user."
            )
        return None

    def _finish(self, call: ToolCall, status: str, result: str) -> ToolFinished:
        fin = ToolFinished(call.id, call.name, status, None, 0, result)  # type: ignore[arg-type]
        self.emit(fin)
        return fin

    def _finish_error(self, call: ToolCall, why: str) -> ToolFinished:
        return self._finish(call, "failed", f"Error: {why}")


async def _done(value: ToolFinished) -> ToolFinished:
    return value
