"""JavaScript / TypeScript tool declarations, read as text (no node needed to declare).

- llm-functions JS (FORMATS.md §2): the JSDoc block above `function run` (tools) or above each
  `export function NAME` / `exports.NAME = function` (agents); `@property {type} name - text`,
  `[name]` optional, `'a'|'b'` enum. The original lower-cases the whole type, enum values
  included; `lowercase_enums=True` reproduces that (compat switch), the default keeps them.
- Loki TypeScript (FORMATS.md §3): `export [async] function run(a: T, b?: T, c: T = v)` with a
  JSDoc `@param name - text` per parameter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tuiapp.tools.formats.base import ToolLoadError

_JS_TOOL_RUN = re.compile(
    r"^\s*(?:export\s+(?:default\s+)?(?:async\s+)?function\s+run\b|(?:async\s+)?function\s+run\b"
    r"|(?:module\.)?exports\.run\s*=)"
)
_JS_AGENT_FN = re.compile(
    r"^\s*(?:export\s+(?:async\s+)?function\s+([A-Za-z0-9_]+)"
    r"|(?:module\.)?exports\.([A-Za-z0-9_]+)\s*=\s*(?:async\s+)?function\b)"
)
_PROPERTY = re.compile(r"^\{([^}]+)\}\s+(\S+)(?:\s*-\s+|\s+)?")
_PARAM_TAG = re.compile(r"^(?:\{[^}]*\}\s*)?\[?([A-Za-z_$][\w$]*)\S*\s*(?:-\s*)?(.*)$", re.S)
_TS_RUN = re.compile(r"^export\s+(?:async\s+)?function\s+run\s*(?:<[^>]*>)?\s*\(", re.M)


@dataclass(frozen=True)
class JsFunction:
    function: str
    description: str
    parameters: dict[str, Any]
    arg_names: list[str]  # positional order (TypeScript run)
    line: int


# ---- JSDoc blocks -------------------------------------------------------------------------

def _blocks_before(source: str) -> list[tuple[str, int, str]]:
    """(jsdoc text, line number, first code line after it) for every /** */ block."""
    out = []
    lines = source.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("/**"):
            start = i
            while "*/" not in lines[i] and i + 1 < len(lines):
                i += 1
            block = "\n".join(lines[start : i + 1])
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            out.append((block, j + 1, lines[j] if j < len(lines) else ""))
        i += 1
    return out


def _jsdoc_lines(block: str) -> list[str]:
    body = block.strip()
    body = body.removeprefix("/**").removesuffix("*/")
    return [re.sub(r"^\s*\*?\s?", "", line).rstrip() for line in body.splitlines()]


def _split_tags(block: str) -> tuple[str, list[tuple[str, str]]]:
    """(description before the first tag, [(tag, text with continuation lines)])."""
    desc: list[str] = []
    tags: list[tuple[str, str]] = []
    for line in _jsdoc_lines(block):
        m = re.match(r"^@(\w+)\s*(.*)$", line.strip())
        if m:
            tags.append((m.group(1), m.group(2).strip()))
        elif tags:
            tag, text = tags[-1]
            if line.strip():
                tags[-1] = (tag, f"{text}\n{line.strip()}" if text else line.strip())
        else:
            desc.append(line.strip())
    return "\n".join(desc).strip(), tags


# ---- llm-functions JavaScript ---------------------------------------------------------------

def llm_functions_js(source: str, agent: bool, lowercase_enums: bool = False) -> list[JsFunction]:
    out = []
    for block, line, code in _blocks_before(source):
        if agent:
            m = _JS_AGENT_FN.match(code)
            if not m:
                continue
            name = m.group(1) or m.group(2)
            if name.startswith("_"):
                continue
        else:
            if not _JS_TOOL_RUN.match(code):
                continue
            name = "run"
        description, tags = _split_tags(block)
        props: dict[str, Any] = {}
        required: list[str] = []
        for tag, text in tags:
            if tag != "property":
                continue
            pname, schema, is_required = _js_property(text, lowercase_enums, name)
            props[pname] = schema
            if is_required:
                required.append(pname)
        params: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            params["required"] = required
        out.append(JsFunction(name, description, params, list(props), line))
        if not agent:
            break  # a tool declares exactly one function
    return out


def _js_property(text: str, lowercase_enums: bool, func: str) -> tuple[str, dict[str, Any], bool]:
    m = _PROPERTY.match(text)
    if not m:
        raise ToolLoadError(f"{func}: cannot read JSDoc `@property {text.splitlines()[0]}`")
    type_text, name = m.group(1).strip(), m.group(2)
    description = text[m.end() :].strip()
    required = True
    if name.startswith("[") and name.endswith("]"):
        name, required = name[1:-1].split("=", 1)[0], False
    kind = type_text.lower()
    schema: dict[str, Any]
    if "|" in kind:
        source = kind if lowercase_enums else type_text
        schema = {"type": "string", "enum": [_unquote(v) for v in source.split("|")]}
    elif kind in ("string", "boolean", "integer", "number"):
        schema = {"type": kind}
    elif kind in ("object",):
        schema = {"type": "object"}
    elif (item := _array_item(kind)) is not None:
        schema = {"type": "array", "items": {"type": item}}
    else:
        raise ToolLoadError(f"{func}: unsupported JSDoc type {{{type_text}}} of {name!r}")
    schema["description"] = description
    return name, schema, required


def _array_item(kind: str) -> str | None:
    scalar = "(string|number|integer|boolean)"
    m = re.fullmatch(rf"{scalar}\[\]|array<{scalar}>", kind)
    return (m.group(1) or m.group(2)) if m else None


def _unquote(value: str) -> str:
    return value.strip().strip("'\"")


# ---- Loki TypeScript ----------------------------------------------------------------------

def loki_ts(source: str) -> JsFunction:
    """The `export function run(...)` of a Loki TypeScript tool. Raises ToolLoadError."""
    m = _TS_RUN.search(source)
    if not m:
        if re.search(r"\b(?:const|let|var)\s+run\s*=", source):
            raise ToolLoadError("`run` must be an `export function` (arrow functions and function "
                                "expressions are not supported)")
        if re.search(r"^\s*(?:async\s+)?function\s+run\b", source, re.M):
            raise ToolLoadError("`function run` must be exported: `export function run(...)`")
        raise ToolLoadError("no `export function run(...)`")
    line = source.count("\n", 0, m.start()) + 1
    params_text = _balanced(source, m.end() - 1)
    block = _jsdoc_above(source, m.start())
    if block is None:
        raise ToolLoadError(f"line {line}: `run` has no JSDoc comment; the description and "
                            "@param texts come from it")
    description, tags = _split_tags(block)
    if not description:
        raise ToolLoadError(f"line {line}: the JSDoc of `run` has no description")
    param_docs: dict[str, str] = {}
    for tag, text in tags:
        if tag == "param":
            pm = _PARAM_TAG.match(text)
            if pm:
                param_docs[pm.group(1)] = " ".join(pm.group(2).split())
    props: dict[str, Any] = {}
    required: list[str] = []
    names: list[str] = []
    for raw in _split_top(params_text, ","):
        p = raw.strip()
        if not p:
            continue
        if p.startswith("..."):
            raise ToolLoadError(f"line {line}: rest parameter `{p}` is not supported; "
                                "declare each parameter")
        if p[0] in "{[":
            raise ToolLoadError(f"line {line}: destructured parameter `{' '.join(p.split())}` is "
                                "not supported; use flat parameters")
        name, schema, optional = _ts_param(p, line)
        if param_docs.get(name):
            schema["description"] = param_docs[name]
        props[name] = schema
        names.append(name)
        if not optional:
            required.append(name)
    params: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        params["required"] = required
    return JsFunction("run", description, params, names, line)


def _balanced(source: str, open_at: int) -> str:
    """The text between the parenthesis at `open_at` and its match."""
    depth = 0
    quote = ""
    for i in range(open_at, len(source)):
        c = source[i]
        if quote:
            if c == quote and source[i - 1] != "\\":
                quote = ""
            continue
        if c in "'\"`":
            quote = c
        elif c in "([{<" and not (c == "<" and source[i - 1] == "="):
            depth += 1
        elif c in ")]}>" and not (c == ">" and source[i - 1] == "="):
            depth -= 1
            if depth == 0:
                return source[open_at + 1 : i]
    raise ToolLoadError("unbalanced parentheses in `run(...)`")


def _split_top(text: str, sep: str) -> list[str]:
    """Split on `sep` outside brackets and quotes (`=>` is not a bracket)."""
    parts, depth, quote, cur = [], 0, "", []
    for i, c in enumerate(text):
        if quote:
            cur.append(c)
            if c == quote and text[i - 1] != "\\":
                quote = ""
            continue
        if c in "'\"`":
            quote = c
        elif c in "([{<" and not (c == "<" and i and text[i - 1] == "="):
            depth += 1
        elif c in ")]}>" and not (c == ">" and i and text[i - 1] == "="):
            depth -= 1
        elif c == sep and depth == 0 and not (sep == "=" and text[i + 1 : i + 2] == ">"):
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(c)
    parts.append("".join(cur))
    return parts


def _jsdoc_above(source: str, pos: int) -> str | None:
    before = source[:pos].rstrip()
    if not before.endswith("*/"):
        return None
    start = before.rfind("/**")
    return before[start:] if start >= 0 else None


def _ts_param(text: str, line: int) -> tuple[str, dict[str, Any], bool]:
    head, *default = _split_top(text, "=")
    m = re.match(r"^([A-Za-z_$][\w$]*)\s*(\?)?\s*(?::\s*(.+))?$", head.strip(), re.S)
    if not m:
        raise ToolLoadError(f"line {line}: cannot read parameter `{text}`")
    name, question, type_text = m.group(1), m.group(2), (m.group(3) or "").strip()
    optional = bool(question) or bool(default)
    if not type_text:
        return name, {"type": "string"}, optional
    members = [t.strip() for t in _split_top(type_text, "|") if t.strip()]
    rest = [t for t in members if t not in ("null", "undefined")]
    optional = optional or len(rest) < len(members)
    if rest and all(re.fullmatch(r"""(['"]).*\1""", t) for t in rest):
        return name, {"type": "string", "enum": [t[1:-1] for t in rest]}, optional
    if len(rest) != 1:
        raise ToolLoadError(f"line {line}: parameter {name!r}: unsupported type `{type_text}`")
    t = rest[0]
    if t in ("string", "number", "boolean"):
        return name, {"type": t}, optional
    arr = re.fullmatch(r"(string|number|boolean)\[\]|Array<\s*(string|number|boolean)\s*>", t)
    if arr:
        return name, {"type": "array", "items": {"type": arr.group(1) or arr.group(2)}}, optional
    raise ToolLoadError(f"line {line}: parameter {name!r}: unsupported type `{type_text}`")
