"""Exact search-and-replace edits (the built-in `editfile`). Stdlib only, no I/O.

kep loads this same file to show the diff of an `editfile` call before it runs, so what the
user approves is what the built-in writes. Edits work on bytes: a file that is not UTF-8 keeps
every byte no edit touches, and a CRLF file keeps its line endings.
"""

from __future__ import annotations

from typing import Any

MAX_EDITS = 1000  # edits in one call
MAX_BYTES = 16 << 20  # a file larger than this is not edited (writefile replaces it whole)


class EditError(Exception):
    """An edit that cannot be applied: nothing is written."""


def _encoded(text: Any, n: int, field: str) -> bytes:
    if not isinstance(text, str):
        raise EditError(f"edit {n}: {field} must be a string")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise EditError(f"edit {n}: {field} holds a lone surrogate (not text)") from None


def looks_binary(data: bytes) -> bool:
    return b"\0" in data[:8192]


def apply_edits(data: bytes, edits: Any) -> bytes:
    """`data` with each edit applied in order; each search text must occur exactly once in
    the text as the edits before it left it. EditError says which edit failed and why."""
    if not isinstance(edits, list) or not edits:
        raise EditError("edits must be a non-empty list of {search, replace} objects")
    if len(edits) > MAX_EDITS:
        raise EditError(f"{len(edits)} edits in one call; at most {MAX_EDITS}")
    crlf = b"\r\n" in data
    for n, edit in enumerate(edits, 1):
        if not isinstance(edit, dict) or set(edit) != {"search", "replace"}:
            raise EditError(f"edit {n}: must be an object with exactly the fields search and "
                            "replace")
        search = _encoded(edit["search"], n, "search")
        replace = _encoded(edit["replace"], n, "replace")
        if not search:
            raise EditError(f"edit {n}: the search text is empty")
        at = data.find(search)
        if at < 0 and crlf and b"\n" in search and b"\r\n" not in search:
            # The model wrote LF lines; the file has CRLF ones: match and write them as CRLF.
            search = search.replace(b"\n", b"\r\n")
            replace = replace.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
            at = data.find(search)
        if at < 0:
            raise EditError(f"edit {n}: the search text was not found"
                            + (" (after the edits before it)" if n > 1 else "")
                            + "; copy it exactly from the file")
        if data.find(search, at + 1) >= 0:
            count = data.count(search)
            raise EditError(f"edit {n}: the search text appears {max(count, 2)} times; add "
                            "surrounding lines so it appears once")
        data = data[:at] + replace + data[at + len(search):]
    return data
