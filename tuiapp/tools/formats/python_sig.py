"""Python tool declarations read with `ast` (the file is never imported in kep's process).

Shared by llm-functions (`tools/*.py` `run`, `agents/*/tools.py`) and Loki (`functions/tools/*.py`):
type hints → JSON-schema types, the docstring before `Args:` → description, the `Args:` entries
(`name: text` or `name (type, optional): text`) → property descriptions. The two systems differ
in a few rules, chosen by `Rules`.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from tuiapp.tools.formats.base import ToolLoadError

_SCALARS = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
_ARRAYS = {"list", "List", "Sequence", "Iterable", "tuple", "Tuple", "set", "Set"}
_OBJECTS = {"dict", "Dict", "Mapping"}
_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")


@dataclass(frozen=True)
class Rules:
    # A parameter with a default is optional (the sensible reading; llm-functions' own builder
    # only looks at Optional[...], which `[tools] llm_functions_compat = true` reproduces).
    defaults_optional: bool = True
    # Loki rejects *args, **kwargs and positional-only parameters; llm-functions ignores them.
    reject_variadic: bool = False
    # Loki requires a docstring: without one the model gets no description.
    require_docstring: bool = False
    # Loki describes a tool with its whole docstring, Args: included, as written (trimmed).
    whole_docstring: bool = False


@dataclass(frozen=True)
class PyFunction:
    function: str  # the def's name
    description: str
    parameters: dict[str, Any]
    arg_names: list[str]
    line: int


def functions(source: str, rules: Rules, only: str | None = None) -> list[PyFunction]:
    """Top-level public functions (or just `only`), parsed. Raises ToolLoadError."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise ToolLoadError(f"Python syntax error at line {e.lineno}: {e.msg}") from None
    out = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if only is not None and node.name != only:
            continue
        if only is None and node.name.startswith("_"):
            continue  # private helpers are not tools
        out.append(_function(node, rules))
    return out


def _function(node: ast.FunctionDef | ast.AsyncFunctionDef, rules: Rules) -> PyFunction:
    where = f"{node.name}() line {node.lineno}"
    a = node.args
    if rules.reject_variadic:
        if a.vararg:
            raise ToolLoadError(f"{where}: *{a.vararg.arg} is not supported; "
                                "declare each parameter")
        if a.kwarg:
            raise ToolLoadError(f"{where}: **{a.kwarg.arg} is not supported; "
                                "declare each parameter")
        if a.posonlyargs:
            raise ToolLoadError(f"{where}: positional-only parameters (before /) are not supported")
    doc = ast.get_docstring(node) or ""
    if rules.require_docstring and not doc.strip():
        raise ToolLoadError(f"{where}: no docstring; the description and Args: come from it")
    description, arg_docs = parse_docstring(doc)
    if rules.whole_docstring:
        description = (ast.get_docstring(node, clean=False) or "").strip()

    positional = [*a.posonlyargs, *a.args]
    defaults: dict[str, ast.expr | None] = {}
    for arg, default in zip(reversed(positional), reversed(a.defaults), strict=False):
        defaults[arg.arg] = default
    for arg, kw_default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        if kw_default is not None:
            defaults[arg.arg] = kw_default

    props: dict[str, Any] = {}
    required: list[str] = []
    names: list[str] = []
    for arg in [*positional, *a.kwonlyargs]:
        if arg.arg in ("self", "cls"):
            continue
        doc_type, doc_text, doc_optional = arg_docs.get(arg.arg, ("", "", False))
        try:
            if arg.annotation is not None:
                schema, optional = annotation_schema(arg.annotation)
            elif doc_type:
                schema, optional = annotation_schema(_parse_expr(doc_type))
            else:
                schema, optional = {"type": "string"}, False
        except ToolLoadError as e:
            raise ToolLoadError(f"{where}: parameter {arg.arg!r}: {e}") from None
        if doc_text:
            schema["description"] = doc_text
        props[arg.arg] = schema
        names.append(arg.arg)
        has_default = arg.arg in defaults
        if not (optional or doc_optional or (has_default and rules.defaults_optional)):
            required.append(arg.arg)
    params: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        params["required"] = required
    return PyFunction(node.name, description, params, names, node.lineno)


def parse_docstring(doc: str) -> tuple[str, dict[str, tuple[str, str, bool]]]:
    """(description before Args:, {name: (type, text, optional)})."""
    lines = doc.splitlines()
    desc: list[str] = []
    args: dict[str, tuple[str, str, bool]] = {}
    i = 0
    while i < len(lines) and not _ARGS_HEADER.match(lines[i]):
        desc.append(lines[i])
        i += 1
    i += 1
    indent: int | None = None
    current: str | None = None
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        if depth == 0:
            break  # the next section (Returns:, …)
        if indent is None:
            indent = depth
        if depth > indent and current is not None:  # a wrapped description
            t, text, opt = args[current]
            args[current] = (t, f"{text} {line.strip()}".strip(), opt)
            continue
        left, _, text = line.strip().partition(":")
        name, _, type_part = left.strip().partition(" ")
        type_part = type_part.strip()
        if type_part.startswith("(") and type_part.endswith(")"):
            type_part = type_part[1:-1]
        bits = [b.strip() for b in type_part.split(",")] if type_part else []
        optional = any(b.lower() == "optional" for b in bits[1:])
        current = name
        args[name] = (bits[0] if bits else "", text.strip(), optional)
    return "\n".join(desc).strip(), args


def _parse_expr(text: str) -> ast.expr:
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:
        raise ToolLoadError(f"cannot read type {text!r}") from None


def annotation_schema(node: ast.expr) -> tuple[dict[str, Any], bool]:
    """(JSON schema, optional?) for a type annotation."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # "str" forward ref
        return annotation_schema(_parse_expr(node.value))
    if isinstance(node, ast.Constant) and node.value is None:
        raise ToolLoadError("None alone is not a parameter type")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # X | None
        return _union(_flatten_or(node))
    name = _name(node)
    if name is not None:
        if name in _SCALARS:
            return {"type": _SCALARS[name]}, False
        if name in _ARRAYS:
            return {"type": "array", "items": {"type": "string"}}, False
        if name in _OBJECTS:
            return {"type": "object"}, False
        if name == "Any":
            return {"type": "string"}, False
        raise ToolLoadError(f"unsupported type `{ast.unparse(node)}`")
    if isinstance(node, ast.Subscript):
        outer = _name(node.value)
        inner = node.slice
        elts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        if outer == "Optional":
            schema, _ = annotation_schema(elts[0])
            return schema, True
        if outer == "Union":
            return _union(elts)
        if outer == "Annotated":
            return annotation_schema(elts[0])
        if outer in _ARRAYS:
            item, _ = annotation_schema(elts[0])
            return {"type": "array", "items": item}, False
        if outer in _OBJECTS:
            return {"type": "object"}, False
        if outer == "Literal":
            return _literal(elts), False
    raise ToolLoadError(f"unsupported type `{ast.unparse(node)}`")


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):  # typing.List, t.Optional
        return node.attr
    return None


def _flatten_or(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return [*_flatten_or(node.left), *_flatten_or(node.right)]
    return [node]


def _union(members: list[ast.expr]) -> tuple[dict[str, Any], bool]:
    def is_none(e: ast.expr) -> bool:
        return (isinstance(e, ast.Constant) and e.value is None) or _name(e) == "None"

    rest = [m for m in members if not is_none(m)]
    if len(rest) != 1:
        raise ToolLoadError(f"unsupported union `{' | '.join(ast.unparse(m) for m in members)}`")
    schema, _ = annotation_schema(rest[0])
    return schema, len(rest) < len(members)


def _literal(elts: list[ast.expr]) -> dict[str, Any]:
    values = []
    for e in elts:
        if not isinstance(e, ast.Constant):
            raise ToolLoadError(f"Literal member `{ast.unparse(e)}` is not a constant")
        values.append(e.value)
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return {"type": "integer", "enum": values}
    return {"type": "string", "enum": [v if isinstance(v, str) else str(v) for v in values]}
