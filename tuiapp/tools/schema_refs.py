"""`$ref`s in a tool's parameters that kep cannot use: a dangling pointer, a reference outside
the schema, or a loop that never reaches the arguments (`{"$ref": "#"}`).

A recursive schema that descends (a tree whose children are nodes) is fine: validation stops
with the data. A reference that applies to the same value again (through $ref, allOf, anyOf,
oneOf, not, if/then/else) and comes back to itself never does, and jsonschema recurses until
Python gives up. Remote references are refused too: checking arguments must not fetch URLs.
The walk is iterative, so a deeply nested schema cannot exhaust the stack here.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

# Keywords whose subschemas apply to the same value as their parent.
SAME_VALUE_LISTS = ("allOf", "anyOf", "oneOf")
SAME_VALUE_ONE = ("not", "if", "then", "else")
SAME_VALUE_MAPS = ("dependentSchemas",)


def _children(node: Any) -> list[Any]:
    if isinstance(node, dict):
        return list(node.values())
    if isinstance(node, list):
        return list(node)
    return []


def _anchors(root: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, dict) and isinstance(node.get("$anchor"), str):
            found.setdefault(node["$anchor"], node)
        stack.extend(_children(node))
    return found


def _resolve(root: Any, ref: str, anchors: dict[str, Any]) -> tuple[Any, str | None]:
    """(target, None) or (None, why it cannot be used)."""
    if not ref.startswith("#"):
        return None, f"$ref {ref!r} points outside the schema (only local #/... refs work)"
    fragment = unquote(ref[1:])
    if fragment and not fragment.startswith("/"):
        if fragment in anchors:
            return anchors[fragment], None
        return None, f"$ref {ref!r} names no $anchor in the schema"
    node = root
    for part in fragment.split("/")[1:] if fragment else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None, f"$ref {ref!r} points at nothing (dangling)"
    if not isinstance(node, dict | bool):
        return None, f"$ref {ref!r} points at a {type(node).__name__}, not a schema"
    return node, None


def _same_value_refs(node: Any) -> list[str]:
    """The $refs that apply to the same value as `node` (directly or via combinators)."""
    refs: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if not isinstance(n, dict):
            continue
        if isinstance(n.get("$ref"), str):
            refs.append(n["$ref"])
        for k in SAME_VALUE_LISTS:
            if isinstance(n.get(k), list):
                stack.extend(n[k])
        for k in SAME_VALUE_ONE:
            stack.append(n.get(k))
        for k in SAME_VALUE_MAPS:
            if isinstance(n.get(k), dict):
                stack.extend(n[k].values())
    return refs


def ref_problem(schema: Any) -> str | None:
    """Why the $refs of `schema` make it unusable, or None."""
    anchors = _anchors(schema)
    refs: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            refs.add(node["$ref"])
        stack.extend(_children(node))
    targets: dict[str, Any] = {}
    for ref in sorted(refs):
        target, why = _resolve(schema, ref, anchors)
        if why:
            return why
        targets[ref] = target
    # A loop among references that apply to the same value: depth-first, iterative.
    graph = {ref: _same_value_refs(t) for ref, t in targets.items()}
    graph["\0root"] = _same_value_refs(schema)
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    for start in graph:
        if state.get(start):
            continue
        path = [(start, iter(graph[start]))]
        state[start] = 1
        while path:
            ref, it = path[-1]
            nxt = next(it, None)
            if nxt is None:
                state[ref] = 2
                path.pop()
            elif state.get(nxt) == 1:
                return f"$ref {nxt!r} refers back to itself without reaching the arguments (a loop)"
            elif not state.get(nxt) and nxt in graph:
                state[nxt] = 1
                path.append((nxt, iter(graph[nxt])))
    return None
