"""kep's built-in model: no network, no key, deterministic, and still useful.

A message that names a tool (`readfile README.md`, `readfile {"filename": "README.md"}`,
`/call readfile …`) becomes a real tool call through the normal approval and runner path;
after the result it answers with a short summary. Several calls, one per line or separated by
`;` (`readfile a.txt; readfile b.txt`), become several calls in one reply, as real models make
them. Anything else gets a reply listing the tools and how to configure a real provider. New
users, the tests and the screenshots all exercise the whole loop with it.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

from tuiapp.providers.base import Provider, StreamEnd, StreamItem
from tuiapp.tools import unavailable
from tuiapp.vocab.events import TextDelta, Usage
from tuiapp.vocab.messages import Message, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

FIRST_LINES = 8


class OfflineProvider(Provider):
    @property
    def label(self) -> str:
        return "offline"

    async def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str | None
    ) -> AsyncIterator[StreamItem]:
        by_name = {t.name: t for t in tools}
        last = messages[-1] if messages else Message("user", "")
        if last.role == "tool":
            text = summarise_results(_trailing_results(messages))
        else:
            calls, skipped = parse_calls(last.content, by_name)
            if calls:
                if skipped:
                    yield TextDelta(skipped_note(skipped))
                for call in calls:
                    yield call
                yield Usage(_tokens(messages), 10 * len(calls))
                yield StreamEnd("tool_use")
                return
            text = unavailable_note(last.content, by_name) + help_text(tools)
        delay = float(os.environ.get("KEP_OFFLINE_DELAY", "0") or 0)
        for chunk in re.findall(r"\S*\s*", text):
            if chunk:
                yield TextDelta(chunk)
                # Yield to the loop even with no delay, so a UI stays responsive mid-reply.
                await asyncio.sleep(delay)
        yield Usage(_tokens(messages), len(text.split()))
        yield StreamEnd("end_turn")


def _tokens(messages: Sequence[Message]) -> int:
    return sum(len(m.content.split()) for m in messages)


def _trailing_results(messages: Sequence[Message]) -> list[Message]:
    out: list[Message] = []
    for m in reversed(messages):
        if m.role != "tool":
            break
        out.append(m)
    return out[::-1]


def parse_calls(text: str, tools: dict[str, ToolSpec]) -> tuple[list[ToolCall], list[str]]:
    """Every call in a message: one per line or `;`-separated (outside quotes and braces).
    Returns (calls, the non-empty pieces that are not calls). No call at all: ([], [])."""
    pieces = [p.strip() for p in split_calls(text)]
    pieces = [p for p in pieces if p]
    calls, skipped = [], []
    for piece in pieces:
        call = parse_call(piece, tools)
        if call is None:
            skipped.append(piece)
        else:
            calls.append(call)
    return (calls, skipped) if calls else ([], [])


def split_calls(text: str) -> list[str]:
    """Split at newlines and `;` that are outside quotes and `{…}`/`[…]`, so JSON arguments
    and quoted words keep theirs: `grep "a;b" .; readfile x` is two calls. An unclosed quote
    (an apostrophe in `don't`) is read as a plain character; an unclosed brace keeps the
    text whole, so a broken JSON argument is reported as such rather than cut up."""
    pieces = _split(text, quotes=True)
    if pieces is None:
        pieces = _split(text, quotes=False)
    return pieces if pieces is not None else [text]


def _split(text: str, *, quotes: bool) -> list[str] | None:
    pieces: list[str] = []
    start = depth = 0
    quote = ""
    escaped = False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote:
                quote = ""
        elif quotes and ch in "\"'":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth = max(0, depth - 1)
        elif ch in ";\n" and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
    pieces.append(text[start:])
    return None if quote or depth else pieces


def skipped_note(skipped: list[str]) -> str:
    shown = ", ".join(f"`{_short(p)}`" for p in skipped[:3])
    more = f" and {len(skipped) - 3} more" if len(skipped) > 3 else ""
    return f"Not a tool call, skipped: {shown}{more}.\n\n"


def _short(piece: str, limit: int = 40) -> str:
    piece = " ".join(piece.split()).replace("`", "ʼ")
    return piece if len(piece) <= limit else piece[: limit - 1] + "…"


def parse_call(text: str, tools: dict[str, ToolSpec]) -> ToolCall | None:
    """`NAME args…`, `NAME {json}` or `/call NAME …` where NAME is a known tool."""
    text = text.strip()
    if text.startswith("/call") and text[5:6].isspace():
        text = text[5:].lstrip()
    # The name ends at the first whitespace of any kind (a tab is as good as a space).
    name, rest = m.groups() if (m := re.match(r"(\S+)\s*(.*)", text, re.S)) else ("", "")
    if name not in tools:
        return None
    rest = rest.strip()
    call_id = f"call_{uuid.uuid4().hex[:12]}"
    if rest.startswith("{"):
        return ToolCall.from_raw(call_id, name, rest)
    args = positional_arguments(rest, tools[name].parameters)
    return ToolCall(call_id, name, args, _json(args))


def positional_arguments(rest: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """Map `a b key=c` onto the schema: key=value by name, the others in order (required
    parameters first); the last positional parameter takes the remaining words."""
    props: dict[str, Any] = parameters.get("properties") or {}
    required = [p for p in parameters.get("required", []) if p in props]
    order = required + [p for p in props if p not in required]
    words = _words(rest)
    args: dict[str, Any] = {}
    loose: list[str] = []
    for w in words:
        key, eq, value = w.partition("=")
        if eq and key in props:
            args[key] = _coerce(value, props[key])
        else:
            loose.append(w)
    free = [p for p in order if p not in args]
    for i, param in enumerate(free):
        if not loose:
            break
        if i == len(free) - 1 or len(loose) == 1:
            value, loose = " ".join(loose), []
        else:
            value, loose = loose[0], loose[1:]
        args[param] = _coerce(value, props[param])
    return args


SHLEX_LIMIT = 10_000  # shlex reads a character at a time: seconds for a long argument


def _words(rest: str) -> list[str]:
    """Shell-style words; plain whitespace splitting when there is nothing to unquote, or the
    text is too long for shlex to stay quick (the provider runs on the UI's event loop)."""
    if len(rest) > SHLEX_LIMIT or not any(c in rest for c in "\"'\\"):
        return rest.split()
    try:
        return shlex.split(rest)
    except ValueError:
        return rest.split()


def _coerce(value: str, schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    try:
        if kind == "integer":
            return int(value)
        if kind == "number":
            return float(value)
    except ValueError:
        return value
    if kind == "boolean":
        return value.lower() in ("1", "true", "yes", "y", "on")
    if kind == "array":
        return [v for v in value.split(",") if v]
    return value


def _json(args: dict[str, Any]) -> str:
    import json

    return json.dumps(args, ensure_ascii=False)


# The runner's note in a capped result (tools.call_output): "N bytes omitted of TOTAL".
TRUNCATED = re.compile(r"\[… output truncated: (\d+) bytes omitted of (\d+)")


def summarise_results(results: list[Message]) -> str:
    parts = []
    for m in results:
        body = m.content
        lines = body.splitlines()
        size = len(body.encode())
        if m.is_error and body.startswith(("the user denied", "denied by policy", "not run")):
            head = f"**{m.name}** was not run."
        elif m.is_error:
            head = f"**{m.name}** failed."
        elif cut := TRUNCATED.search(body):
            # The model got the head and the tail: the size is the whole output's.
            head = (f"**{m.name}** finished ok (exit 0): {int(cut.group(2)):,} bytes "
                    f"({int(cut.group(1)):,} of them left out of what the model got).")
        else:
            n = len(lines)
            head = f"**{m.name}** finished ok (exit 0): {size:,} bytes, {n:,} line{'s' * (n != 1)}."
        if m.tool_images:  # kep's offline model reads no pixels, but says what came
            k = len(m.tool_images)
            kinds = ", ".join(sorted({i.media_type for i in m.tool_images}))
            head += f" It returned {k} image{'s' * (k != 1)} ({kinds}), which I cannot look at."
        shown = "\n".join(lines[:FIRST_LINES]).replace("```", "ʼʼʼ")
        more = f"\n… {len(lines) - FIRST_LINES} more lines" if len(lines) > FIRST_LINES else ""
        parts.append(f"{head}\n\n```\n{shown}\n```{more}" if shown else f"{head} (no output)")
    if len(results) > 1:
        ok = sum(not m.is_error for m in results)
        parts.insert(0, f"{len(results)} calls: {ok} finished ok, {len(results) - ok} not.")
    return "\n\n".join(parts)


def unavailable_note(text: str, tools: dict[str, ToolSpec]) -> str:
    """`NAME is not available: why` when the message starts with a tool's name that is not
    offered and the workspace knows why; else ""."""
    first = text.strip()
    if first.startswith("/call") and first[5:6].isspace():
        first = first[5:].lstrip()
    name = first.split(maxsplit=1)[0] if first else ""
    if not name or name in tools or unavailable.explain is None:
        return ""
    try:
        why = unavailable.explain(name)
    except Exception:  # a question the reply can do without: never fail the reply
        return ""
    return f"`{_short(name)}` is not available: {why}.\n\n" if why else ""


def help_text(tools: Sequence[ToolSpec]) -> str:
    listing = "\n".join(
        f"- `{t.name}` — {t.description.splitlines()[0] if t.description else ''}"
        for t in sorted(tools, key=lambda t: t.name)
    ) or "- (none found: add executables to prompts/functions/)"
    example = "readfile README.md" if any(t.name == "readfile" for t in tools) else (
        f"{tools[0].name} …" if tools else "NAME args")
    return (
        "I'm kep's **offline** model: no network, no API key. I run tools for you: type a "
        f"tool's name and its arguments, e.g. `{example}`, or JSON: "
        '`/call NAME {"arg": "value"}`. Several calls: one per line, or `a; b`.\n\n'
        f"Tools available ({len(tools)}):\n{listing}\n\n"
        "To talk to a real model, set `OPENAI_API_KEY` or `ANTHROPIC_API_KEY` (or "
        "`OPENROUTER_API_KEY`, or a `[providers.NAME]` table in kep.toml) and pick it with "
        "`--model PROVIDER/MODEL` or the command palette."
    )
