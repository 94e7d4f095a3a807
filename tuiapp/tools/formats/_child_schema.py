"""Schemas from live signatures, for _child_python.py (extension packs): loaded by path in
the child, never imported by kep itself.

A pack's host (luna) builds a pydantic model from each tool's signature and sends its JSON
schema as LangChain does: $refs inlined, every `title` keyword removed. kep does the same when
pydantic is importable in the pack's interpreter, and maps the common hints by hand otherwise.
"""

from __future__ import annotations

import inspect
import json
import typing

_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}


def type_schema(tp: typing.Any) -> dict:
    """Without pydantic: the schema pydantic would give (titles removed), for common hints."""
    if tp is inspect.Parameter.empty or isinstance(tp, str):
        return {"type": "string"}
    if tp is typing.Any:
        return {}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    if tp is type(None):
        return {"type": "null"}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or type(tp).__name__ == "UnionType":
        return {"anyOf": [type_schema(a) for a in args]}  # Optional[X]: [X, null]
    if origin is typing.Literal:
        kinds = {type(a) for a in args}
        out: dict = {"enum": list(args)}
        if len(kinds) == 1 and next(iter(kinds)) in _SCALARS:
            out["type"] = _SCALARS[next(iter(kinds))]
        return out
    if origin is getattr(typing, "Annotated", None):
        return type_schema(args[0])
    if tp in (list, tuple, set) or origin in (list, tuple, set):
        return {"type": "array", "items": type_schema(args[0]) if args else {}}
    if tp is dict or origin is dict:
        value = args[1] if len(args) == 2 else typing.Any
        return {"type": "object",
                "additionalProperties": True if value is typing.Any else type_schema(value)}
    if hasattr(tp, "model_json_schema"):  # a pydantic model parameter
        return _luna_tidy(tp.model_json_schema())
    return {"type": "string"}


def _json_default(value: typing.Any) -> tuple[bool, typing.Any]:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False, None
    return True, value


def manual_schema(fn: typing.Any) -> dict:
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:
        hints = {}  # unresolvable string annotations: fall back to what the signature says
    props: dict = {}
    required = []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        prop = type_schema(hints.get(p.name, p.annotation))
        if p.default is p.empty:
            required.append(p.name)
        else:
            ok, value = _json_default(p.default)
            if ok:
                prop["default"] = value
        props[p.name] = prop
    out: dict = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    return out


def signature_schema(fn: typing.Any) -> dict:
    """What a pack's host (luna: a pydantic model made from the signature, as LangChain sends
    it: $refs inlined, titles removed) gives the model; kep's own mapping when pydantic is not
    importable here or cannot model the signature."""
    try:
        import pydantic
    except ImportError:
        return manual_schema(fn)
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn, globalns=getattr(fn, "__globals__", {}))
    except Exception:
        hints = {}
    fields: dict = {}
    for name, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        ann = hints.get(name, p.annotation if p.annotation is not p.empty else str)
        fields[name] = (ann, p.default if p.default is not p.empty else ...)
    try:
        model = pydantic.create_model(f"{fn.__name__}Args", **fields)
        schema = model.model_json_schema()
    except Exception:
        return manual_schema(fn)
    return _luna_tidy(schema)


def _luna_tidy(schema: dict) -> dict:
    defs = schema.pop("$defs", None) or schema.pop("definitions", None) or {}
    schema = _inline_refs(schema, defs, 0)
    schema.pop("title", None)
    return _drop_titles(schema)


def _inline_refs(node: typing.Any, defs: dict, depth: int) -> typing.Any:
    if isinstance(node, list):
        return [_inline_refs(x, defs, depth) for x in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith(("#/$defs/", "#/definitions/")) and depth < 20:
        target = defs.get(ref.rsplit("/", 1)[-1], {})
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return _inline_refs({**target, **rest}, defs, depth + 1)
    return {k: _inline_refs(v, defs, depth) for k, v in node.items()}


def _drop_titles(node: dict, parent: str = "") -> dict:
    """LangChain's rule: every `title` keyword goes; a property that is called "title" stays."""
    out = {}
    for k, v in node.items():
        if k == "title" and not (parent == "properties" and isinstance(v, dict)):
            continue
        if isinstance(v, dict):
            out[k] = _drop_titles(v, k)
        elif isinstance(v, list):
            out[k] = [_drop_titles(x, k) if isinstance(x, dict) else x for x in v]
        else:
            out[k] = v
    return out
