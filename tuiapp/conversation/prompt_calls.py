"""keprompt `.cmd` / `.tool_call` / `.tool_result` statements: the call text parsed into a
function name and arguments, each argument a real literal (quoted strings unquoted, numbers
as numbers, commas inside quotes kept), then fitted to the tool's schema (coerce).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tuiapp.conversation.prompt_model import PromptFile, Statement

NAME = re.compile(r"[A-Za-z_][\w-]*")  # a variable or argument name


@dataclass(frozen=True)
class CmdCall:
    name: str
    arguments: dict[str, Any]
    target: str | None = None  # `.cmd f(…) as var`
    # Source text of every argument not written as a quoted string, for schema coercion.
    raw: Mapping[str, str] = field(default_factory=dict)


def parse_cmd(pf: PromptFile, st: Statement) -> CmdCall:
    text = st.value.strip()
    target = None
    m = re.search(r"\)\s+as\s+(\S+)\s*$", text)
    if m:
        target = m.group(1)
        if not NAME.fullmatch(target):
            raise pf.error(st, f"`.cmd … as NAME`: {target!r} is not a variable name")
        text = text[: m.start() + 1]
    return _parse_call_text(pf, st, text, target, ".cmd")


def parse_tool_call(pf: PromptFile, st: Statement) -> tuple[CmdCall, str]:
    text, sep, call_id = st.value.strip().rpartition(" id=")
    if not sep or not call_id.strip():
        raise pf.error(st, "`.tool_call` needs `fn(arg=value, …) id=CALL_ID`")
    return _parse_call_text(pf, st, text.strip(), None, ".tool_call"), call_id.strip()


def parse_tool_result_header(pf: PromptFile, st: Statement) -> tuple[str, str]:
    header = st.value.partition("\n")[0]
    fields = dict(p.split("=", 1) for p in header.split() if "=" in p)
    if not fields.get("id") or not fields.get("name"):
        raise pf.error(st, "`.tool_result` needs `id=CALL_ID name=FUNCTION` on its first line")
    return fields["id"], fields["name"]


def _parse_call_text(pf: PromptFile, st: Statement, text: str, target: str | None,
                     kw: str) -> CmdCall:
    m = re.fullmatch(r"([A-Za-z_][\w-]*)\s*\((.*)\)", text, re.S)
    if not m:
        raise pf.error(st, f"`{kw}` needs a call: {kw} function(arg=value, …)")
    name, inner = m.group(1), m.group(2)
    arguments: dict[str, Any] = {}
    raws: dict[str, str] = {}
    try:
        parts = list(split_arguments(inner))
    except ValueError as e:
        raise pf.error(st, f"`{kw}` arguments: {e}") from None
    for part in parts:
        key, eq, raw = part.partition("=")
        key, raw = key.strip(), raw.strip()
        if not eq or not NAME.fullmatch(key):
            raise pf.error(st, f"`{kw}` arguments are name=value; got {part.strip()!r}")
        if key in arguments:
            raise pf.error(st, f"`{kw}`: argument {key!r} given twice")
        value = literal(raw)
        arguments[key] = value
        if not (isinstance(value, str) and raw[:1] in "\"'"):
            raws[key] = raw
    return CmdCall(name, arguments, target, raws)


def split_arguments(text: str) -> Iterable[str]:
    """Split on top-level commas: quotes, brackets and braces protect theirs."""
    depth, quote, start, i = 0, "", 0, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            if text[start:i].strip():
                yield text[start:i]
            start = i + 1
        i += 1
    if quote:
        raise ValueError(f"unclosed {quote} quote")
    if depth:
        raise ValueError("unbalanced brackets")
    if text[start:].strip():
        yield text[start:]


JSON_WORDS = {"true": True, "false": False, "null": None}


def literal(raw: str) -> Any:
    """A Python (or JSON) literal when it is one; otherwise the bare text, as keprompt
    authors write it (`filename=data/x.txt`, `filename=<<file>>`)."""
    if raw in JSON_WORDS:
        return JSON_WORDS[raw]
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return raw


def coerce(value: Any, raw: str | None, schema: Mapping[str, Any]) -> Any:
    """Fit an unquoted argument to the tool's schema: `1.10` stays "1.10" for a string
    parameter, a bare `<<n>>` that became "5" is 5 for an integer one."""
    kind = schema.get("type")
    if raw is None:
        return value
    if kind == "string" and not isinstance(value, str):
        return raw
    if not isinstance(value, str):
        return value
    try:
        if kind == "integer":
            return int(value)
        if kind == "number":
            return float(value)
    except ValueError:
        return value
    if kind == "boolean" and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value
