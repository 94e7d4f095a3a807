"""The texts an approval rule's `args` regex is matched against (README "Approval rules").

A model can spell the same arguments many ways: a tab for a space, `\\u0020`, an argv array,
a nested object, keys in any order, a key given twice. The tool gets the decoded values, so
`deny` and `ask` rules look at those, in every shape a command can take:

- every value at any depth (strings as decoded; numbers, booleans and null as JSON), and every
  object key;
- every array of plain values joined by one space (`["rm", "-rf", "x"]` reads `rm -rf x`);
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

from tuiapp.vocab.messages import canonical_json

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
    if raw and '"' in raw:
        alt = _all_pairs(raw)
        if alt is not None:
            objects.append(alt)
    found: dict[str, None] = {}  # an ordered set
    rank = {k: i for i, k in enumerate(order)}
    for obj in objects:
        per_key, keys, argvs = _scan(obj)
        for text in keys:
            found.setdefault(text, None)
        for _, values in per_key:
            for text in values:
                found.setdefault(text, None)
        for text in argvs:
            found.setdefault(text, None)
        by_schema = sorted(per_key, key=lambda kv: (rank.get(kv[0], len(rank)), kv[0]))
        by_key = sorted(per_key, key=lambda kv: kv[0])
        for pairs in (by_schema, by_key):
            found.setdefault(" ".join(t for _, values in pairs for t in values), None)
    for text in list(found):
        for variant in _variants(text):
            found.setdefault(variant, None)
    return list(found)


def _variants(text: str) -> Iterable[str]:
    yield _SPACE.sub(" ", text).strip()
    unquoted = _QUOTING.sub("", _CONTINUATION.sub("", text))
    yield _SPACE.sub(" ", unquoted).strip()


class _Pairs(list):  # type: ignore[type-arg]
    """An object decoded with every (key, value) pair kept, duplicates included."""


def _all_pairs(raw: str) -> Any:
    """The raw object with every copy of a repeated key, or None when no key repeats (the
    decoded arguments then say it all)."""
    repeated = False

    def hook(pairs: list[tuple[str, Any]]) -> _Pairs:
        nonlocal repeated
        repeated = repeated or len({k for k, _ in pairs}) != len(pairs)
        return _Pairs(pairs)

    try:
        value = json.loads(raw, object_pairs_hook=hook)
    except (ValueError, RecursionError):
        return None
    return value if repeated and isinstance(value, _Pairs) else None


def _pairs(obj: Any) -> list[tuple[str, Any]]:
    if isinstance(obj, _Pairs):
        return list(obj)
    if isinstance(obj, Mapping):
        return list(obj.items())
    return []


def _scalar(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _scan(obj: Any) -> tuple[list[tuple[str, list[str]]], list[str], list[str]]:
    """One pass, without recursion (a hostile call can nest thousands deep): each top-level
    key with the values under it in order, every key at any depth, and every array of plain
    values joined by one space."""
    per_key: list[tuple[str, list[str]]] = []
    keys: list[str] = []
    argvs: list[str] = []
    for top, value in _pairs(obj):
        keys.append(top)
        values: list[str] = []
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, _Pairs | dict):
                pairs = _pairs(item)
                keys.extend(k for k, _ in pairs)
                stack.extend(v for _, v in reversed(pairs))
            elif isinstance(item, list):
                if not any(isinstance(i, list | dict) for i in item):
                    argvs.append(" ".join(map(_scalar, item)))
                stack.extend(reversed(item))
            else:
                values.append(_scalar(item))
        per_key.append((top, values))
    return per_key, keys, argvs
