"""The texts an approval rule's `args` regex is matched against (README "Approval rules").

A model can spell the same arguments many ways: a tab for a space, `\\u0020`, an argv array,
a nested object, keys in any order, a key given twice. The tool gets the decoded values, so
`deny` and `ask` rules look at those, in every shape a command can take:

- every value at any depth (strings as decoded; numbers, booleans and null as JSON), and every
  object key;
- every array's items joined by one space (`["rm", "-rf", "x"]` reads `rm -rf x`);
- all the call's values joined by one space, in the tool's parameter order and in key order;
- each of those again with every run of whitespace collapsed to one space, and with shell
  quotes and backslashes removed as well (`r'm' -r\\<newline>f` reads `rm -rf`).

Matching more texts can only make a deny or ask rule match more often. `allow` rules must not
be widened that way, so they see one strict text instead: the canonical JSON of the decoded
arguments (`canonical`), in which every key and every character is visible.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tuiapp.core.messages import canonical_json

_SPACE = re.compile(r"\s+")
_CONTINUATION = re.compile(r"\\\r?\n")  # a shell joins the lines around backslash-newline
_QUOTING = re.compile(r"[\"'\\`]")


def canonical(arguments: Mapping[str, Any]) -> str:
    """What `allow` rules see: keys sorted, no spaces, strings JSON-escaped."""
    return canonical_json(arguments)


def texts(
    arguments: Mapping[str, Any], raw: str = "", order: Sequence[str] = ()
) -> list[str]:
    """What `deny` and `ask` rules search, without duplicates.

    `raw` is the JSON text the model sent: when it repeats a key, every copy's value is
    searched too (the decoded object keeps only the last). `order` is the tool's parameter
    order, for the joined text."""
    objects: list[Any] = [arguments]
    if raw:
        alt = _all_pairs(raw)
        if alt is not None:
            objects.append(alt)
    found: dict[str, None] = {}  # an ordered set

    def add(text: str) -> None:
        found.setdefault(text, None)

    for obj in objects:
        for text in _leaf_texts(obj):
            add(text)
        for items in _arrays(obj):
            add(" ".join(_values(items)))
        top = _pairs(obj)
        rank = {k: i for i, k in enumerate(order)}
        by_schema = sorted(top, key=lambda kv: (rank.get(kv[0], len(rank)), kv[0]))
        by_key = sorted(top, key=lambda kv: kv[0])
        for pairs in (by_schema, by_key):
            add(" ".join(t for _, v in pairs for t in _values(v)))
    for text in list(found):
        for variant in _variants(text):
            add(variant)
    return list(found)


def _variants(text: str) -> Iterable[str]:
    yield _SPACE.sub(" ", text).strip()
    unquoted = _QUOTING.sub("", _CONTINUATION.sub("", text))
    yield _SPACE.sub(" ", unquoted).strip()


class _Pairs(list):  # type: ignore[type-arg]
    """An object decoded with every (key, value) pair kept, duplicates included."""


def _all_pairs(raw: str) -> Any:
    try:
        value = json.loads(raw, object_pairs_hook=_Pairs)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, _Pairs) else None


def _pairs(obj: Any) -> list[tuple[str, Any]]:
    if isinstance(obj, _Pairs):
        return list(obj)
    if isinstance(obj, Mapping):
        return list(obj.items())
    return []


def _scalar(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _walk(value: Any) -> Iterable[tuple[str, Any]]:
    """Depth first, without recursion (a hostile call can nest thousands deep): yields
    ("key", text), ("leaf", text) and ("array", items)."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Pairs | Mapping):
            pairs = _pairs(item)
            for k, v in reversed(pairs):
                stack.append(v)
                stack.append(_Key(k))
        elif isinstance(item, list):
            yield "array", item
            stack.extend(reversed(item))
        elif isinstance(item, _Key):
            yield "key", str(item)
        else:
            yield "leaf", _scalar(item)


class _Key(str):
    pass


def _leaf_texts(obj: Any) -> Iterable[str]:
    for kind, item in _walk(obj):
        if kind != "array":
            yield item


def _arrays(obj: Any) -> Iterable[list[Any]]:
    for kind, item in _walk(obj):
        if kind == "array":
            yield item


def _values(value: Any) -> list[str]:
    """The scalar values under `value`, in order (keys left out)."""
    return [item for kind, item in _walk(value) if kind == "leaf"]
