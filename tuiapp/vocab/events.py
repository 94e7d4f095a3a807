"""Everything the UI, the session store and `kep run --json` see, as frozen dataclasses.

Tool call lifecycle: requested → (allowed | denied | asked → approved/denied/edited) →
running → finished(ok | failed | cancelled | timed_out). Every step is one event.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from tuiapp.vocab.messages import Message, ToolCall, ToolImage
from tuiapp.vocab.records import FrozenRecord

ToolStatus = Literal["ok", "failed", "cancelled", "timed_out", "denied"]
Decision = Literal["allow", "ask", "deny"]


# Every event is @dataclass(frozen=True, eq=False, repr=False): FrozenRecord gives the same
# __eq__, __hash__ and __repr__ without dataclass compiling them per class at import (this
# module is on the way to the TUI's first frame).


@dataclass(frozen=True, eq=False, repr=False)
class Event(FrozenRecord):
    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": type(self).__name__}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, ToolCall):
                call = v
                v = {"id": call.id, "name": call.name, "arguments": call.arguments}
                if call.arguments_error:
                    v["arguments_error"] = call.arguments_error
            elif isinstance(v, Message):
                v = v.to_dict(image_data=False)  # stored once, in the session, not here
            elif isinstance(v, tuple) and v and isinstance(v[0], ToolImage):
                v = [i.to_dict(data=False) for i in v]
            elif dataclasses.is_dataclass(v) and not isinstance(v, type):
                v = dataclasses.asdict(v)
            d[f.name] = v
        return d


# ---- turn and model output -------------------------------------------------------------

@dataclass(frozen=True, eq=False, repr=False)
class TurnStarted(Event):
    text: str


@dataclass(frozen=True, eq=False, repr=False)
class TextDelta(Event):
    text: str


@dataclass(frozen=True, eq=False, repr=False)
class ReasoningDelta(Event):
    """Streamed thinking or a reasoning summary: shown dimmed, never part of the answer."""

    text: str


@dataclass(frozen=True, eq=False, repr=False)
class MessageAdded(Event):
    """A message appended to the history (user, assistant, tool result). The session store
    persists exactly these, so a resumed session is the history the model saw."""

    message: Message


@dataclass(frozen=True, eq=False, repr=False)
class Usage(Event):
    """Tokens of one request (from a provider) or a conversation's running totals (emitted).
    input_tokens include cached ones; output_tokens include reasoning ones. cost is in the
    price table's currency, None when no prices are configured."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cost: float | None = None

    def __add__(self, other: Usage) -> Usage:
        cost = (None if self.cost is None and other.cost is None
                else (self.cost or 0.0) + (other.cost or 0.0))
        return Usage(self.input_tokens + other.input_tokens,
                     self.output_tokens + other.output_tokens,
                     self.cached_tokens + other.cached_tokens,
                     self.reasoning_tokens + other.reasoning_tokens, cost)


@dataclass(frozen=True, eq=False, repr=False)
class ContextUsed(Event):
    """How full the model's context is: the input tokens the provider reported for the last
    request, against the model's window (None: not known; set `context_window`)."""

    tokens: int
    window: int | None = None

    @property
    def fraction(self) -> float | None:
        return self.tokens / self.window if self.window else None


@dataclass(frozen=True, eq=False, repr=False)
class Retrying(Event):
    attempt: int
    delay: float
    reason: str


@dataclass(frozen=True, eq=False, repr=False)
class ProviderError(Event):
    """The provider failed. `partial` is True when some of the reply had already arrived
    (it is kept in history, marked interrupted, and the user can retry)."""

    message: str
    partial: bool = False


@dataclass(frozen=True, eq=False, repr=False)
class Compacted(Event):
    """The conversation so far was summarised: `replaced` messages left the context (they
    stay in the session store), `kept` recent ones stayed after the summary. `automatic`:
    the context reached the threshold; else asked for."""

    replaced: int
    kept: int
    summary: str
    tokens_before: int | None = None
    automatic: bool = False


@dataclass(frozen=True, eq=False, repr=False)
class TurnEnded(Event):
    stop_reason: str  # "end_turn" | "max_steps" | "interrupted" | "error" | "tool_use" …
    steps: int = 0


# Stops that end a turn without a complete answer: each is shown as a notice, and `kep run`
# exits 1 on them (reason → what the user reads).
UNFINISHED_STOPS = {
    "max_tokens": "the reply hit the output token limit (max_tokens) and was cut; "
                  "the partial text is kept",
    "refusal": "the model refused to answer (refusal)",
    "content_filter": "the provider's content filter stopped the reply (content_filter)",
    "incomplete": "the provider marked the reply incomplete",
    "pause_turn": "the model paused its turn too many times (pause_turn); send a message "
                  "to let it go on",
}


@dataclass(frozen=True, eq=False, repr=False)
class Notice(Event):
    text: str
    level: Literal["info", "warning", "error"] = "info"


@dataclass(frozen=True, eq=False, repr=False)
class PromptOutput(Event):
    """Text a `.prompt` file prints with `.print` (its output channel: stdout in `kep run`)."""

    text: str


# ---- tool calls ------------------------------------------------------------------------

@dataclass(frozen=True, eq=False, repr=False)
class ToolCallRequested(Event):
    call: ToolCall
    source: str = ""  # where the tool comes from (file path, mcp server)
    format: str = ""


@dataclass(frozen=True, eq=False, repr=False)
class ToolCallDecided(Event):
    """What the policy (and, for `ask`, the user) decided."""

    call_id: str
    decision: Decision  # the policy's verdict
    rule: str  # human description of the rule that matched
    approved: bool | None = None  # for ask: the user's answer
    reason: str = ""  # deny reason typed by the user
    edited_arguments: dict[str, Any] | None = None
    message: str = ""  # the deny rule's deny_message
    # Where the deciding rule is written ("" and 0: no file, e.g. kep's built-in default).
    rule_file: str = ""
    rule_line: int = 0


@dataclass(frozen=True, eq=False, repr=False)
class ToolCallForeseen(Event):
    """What the rules say about a call of the reply before its turn comes (the calls are
    decided one at a time, in order): the approval queue shows each call's real state.
    The call's own ToolCallDecided, when it is reached, is what counts."""

    call_id: str
    decision: Decision
    rule: str


@dataclass(frozen=True, eq=False, repr=False)
class ToolCallQueued(Event):
    """Approved, but `[tools] max_parallel` calls already run: it waits its turn, in order."""

    call_id: str
    name: str
    ahead: int = 0  # calls waiting before it


@dataclass(frozen=True, eq=False, repr=False)
class ToolCallStarted(Event):
    call_id: str
    name: str
    spool_path: str = ""


@dataclass(frozen=True, eq=False, repr=False)
class FileCheckpointed(Event):
    """A file one of kep's file-writing built-ins is about to write, as it was before (the
    session store keeps it, for undo and rewind). `existed` False: there was no such file."""

    call_id: str
    path: str  # relative to the project root, links in it resolved
    existed: bool
    content: bytes = b""

    def to_json(self) -> dict[str, Any]:  # (the bytes stay in the store)
        return {"type": "FileCheckpointed", "call_id": self.call_id, "path": self.path,
                "existed": self.existed, "bytes": len(self.content)}


@dataclass(frozen=True, eq=False, repr=False)
class ToolOutput(Event):
    call_id: str
    stream: Literal["stdout", "stderr"]
    text: str


@dataclass(frozen=True, eq=False, repr=False)
class ToolFinished(Event):
    call_id: str
    name: str
    status: ToolStatus
    exit_code: int | None
    duration_ms: int
    result: str  # exactly what goes back to the model (text; images are placeholders in it)
    truncated: bool = False
    spool_path: str = ""
    images: tuple[ToolImage, ...] = ()  # sent after `result` where the provider takes them
    structured: Any = None  # an MCP tool's structuredContent (filtered), for kep mcp serve


# ---- registry --------------------------------------------------------------------------

@dataclass(frozen=True, eq=False, repr=False)
class RegistryChanged(Event):
    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    broken: tuple[str, ...] = ()  # sources that became broken
    recovered: tuple[str, ...] = ()  # sources that were broken and are ok again

    def is_empty(self) -> bool:
        return not (self.added or self.changed or self.removed or self.broken or self.recovered)

    def summary(self) -> str:
        parts = []
        for label in ("added", "changed", "removed", "broken", "recovered"):
            items = getattr(self, label)
            if items:
                parts.append(f"{label}: {', '.join(items)}")
        return "; ".join(parts) or "no change"
