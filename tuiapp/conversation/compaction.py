"""Compaction: the conversation so far summarised by the current model, so a long session
goes on within the model's context.

The summary replaces the older messages in the context; they stay in the session store
(Message.summary_keeps, session_history.compacted_view). The cut is only ever made where a
turn or a tool step begins, so a tool call is never separated from its result, and each
assistant message keeps its reasoning whole (Responses reasoning items with the message they
precede, Anthropic's signed thinking with its tool use, DeepSeek's reasoning_content). The
summarising request itself carries the older messages as plain text, with no reasoning
items, no tools and no images: no API's rules about those can refuse it. Tool results are
cut before anything else when the text is too long for the request. The offline model gets
a deterministic summary.
"""

from __future__ import annotations

from collections.abc import Sequence

from tuiapp.providers.base import Provider, stream_with_retries
from tuiapp.vocab.events import TextDelta
from tuiapp.vocab.messages import Message

THRESHOLD = 0.85  # default share of the context window that starts a compaction
RESULT_CAP = 2000  # characters of one tool result in the text to summarise
TEXT_CAP = 400_000  # characters of the whole text to summarise (at most)
SUMMARY_PREFIX = "Summary of the conversation so far (earlier messages were compacted):\n\n"
INSTRUCTIONS = (
    "You summarise a conversation between a user and an assistant that uses tools, so that "
    "the assistant can continue it from the summary alone. Keep: the user's goals and "
    "requests, decisions made, facts learned from tool results (file names, values, errors), "
    "what was done and what is still open. Be concise and concrete; no preamble."
)


def cut_point(history: Sequence[Message]) -> int:
    """Where the kept tail starts: the last user message (the turn in progress stays whole),
    or, when that is the first message (one long turn), the last assistant message whose
    earlier calls all have their results. 0: nothing can be compacted."""
    last_user = max((i for i, m in enumerate(history) if m.role == "user"), default=0)
    if last_user > 0:
        return last_user
    open_calls: set[str] = set()
    best = 0
    for i, m in enumerate(history):
        if m.role == "assistant" and not open_calls and i > 0:
            best = i
        if m.role == "assistant":
            open_calls |= {c.id for c in m.tool_calls}
        elif m.role == "tool":
            open_calls.discard(m.tool_call_id or "")
    return best


def as_text(messages: Sequence[Message], cap: int = TEXT_CAP) -> str:
    """The messages as plain text; tool results are shortened first, then left out, then
    the oldest text is cut, until it fits `cap`."""
    for result_cap in (RESULT_CAP, 200, 0):
        text = "\n\n".join(_line(m, result_cap) for m in messages)
        if len(text) <= cap:
            return text
    return "[…earlier text left out…]\n" + text[-cap:]


def _line(m: Message, result_cap: int) -> str:
    if m.role == "tool":
        if result_cap == 0:
            return f"[result of {m.name}: {len(m.content)} characters, left out]"
        body = m.content if len(m.content) <= result_cap else (
            m.content[:result_cap] + f" […{len(m.content) - result_cap} more characters]")
        return f"Tool result ({m.name}{', error' if m.is_error else ''}): {body}"
    if m.role == "assistant":
        calls = "".join(f"\n[called {c.name} with {c.raw_arguments or c.arguments}]"
                        for c in m.tool_calls)
        return f"Assistant: {m.content}{calls}"
    return f"{m.role.capitalize()}: {m.content}"


def deterministic_summary(messages: Sequence[Message]) -> str:
    """What the offline model (which cannot summarise) keeps: the user's requests, the tools
    used and the last answer, each shortened. The same history always gives the same text."""
    asks = [" ".join(m.content.split())[:200] for m in messages if m.role == "user"
            and m.summary_keeps is None and m.content.strip()]
    earlier = [m.content.removeprefix(SUMMARY_PREFIX)[:1000] for m in messages
               if m.summary_keeps is not None]
    tools = sorted({c.name for m in messages for c in m.tool_calls})
    answers = [m.content for m in messages if m.role == "assistant" and m.content.strip()]
    parts = [f"Earlier summary: {e}" for e in earlier]
    parts += [f"The user asked: {a}" for a in asks[-20:]]
    if tools:
        parts.append(f"Tools used: {', '.join(tools)}")
    if answers:
        parts.append(f"Last answer: {' '.join(answers[-1].split())[:500]}")
    return "\n".join(parts) or "(nothing to summarise)"


async def summarise(provider: Provider, messages: Sequence[Message],
                    window: int | None = None) -> str:
    """The current model's summary of `messages` (raises ProviderFailure)."""
    if provider.config.api == "offline":
        return deterministic_summary(messages)
    cap = min(TEXT_CAP, window * 2) if window else TEXT_CAP  # ~2 characters a token: room
    request = [Message("user", "Summarise this conversation so far:\n\n" + as_text(messages, cap))]
    parts: list[str] = []
    async for item in stream_with_retries(provider, request, [], INSTRUCTIONS):
        if isinstance(item, TextDelta):
            parts.append(item.text)
    return "".join(parts).strip() or deterministic_summary(messages)


def summary_message(summary: str, keeps: int) -> Message:
    return Message("user", SUMMARY_PREFIX + summary, summary_keeps=keeps)
