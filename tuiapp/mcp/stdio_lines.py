"""The lines an MCP stdio server writes, turned into messages without ever freezing kep.

A server may write one line of any size, in any number of pieces. Lines are assembled in linear
time (each chunk is searched for a newline once, and a line's pieces are joined once), a line
over LINE_CAP is dropped while it streams (only its first and last KiB are kept, to say which
request it answered), and a big line is decoded and parsed in a worker thread.

Why a 32 MB cap: the largest thing a server legitimately sends in one message is an image
result, and a 20 MB image (the most any provider takes per image) is 27 MB of base64; kep
itself forwards at most 5 MB of base64 per image. Anything longer costs several times its size
in memory while parsed, and nothing kep does with it would be worth that.

A line that cannot be used (too long, not in the encoding, not JSON, not JSON-RPC) becomes one
clear line. When it was the answer to a request (its head or tail says "result"/"error" and
names the id) that request gets a JSON-RPC error carrying the line, so the caller sees it at
once instead of waiting for its timeout; the connection stays, and the server's next answer is
used as usual. Otherwise it goes to the session as the SDK passes on any invalid message (an
Exception on the read stream), and the server's log says what was dropped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.shared.message import SessionMessage

LINE_CAP = 32 << 20  # bytes; see above
THREAD_PARSE_OVER = 1 << 20  # lines longer than this are decoded and parsed off the event loop
KEEP = 1024  # bytes kept from each end of a dropped line: where its id and kind are

_ID = rb'(-?\d{1,18}|"(?:[^"\\\n]|\\.){0,256}")'
_META = rb'"(?:jsonrpc|id)"\s*:\s*(?:-?\d{1,18}|"(?:[^"\\\n]|\\.){0,256}")\s*,\s*'
# A response: its first key other than jsonrpc/id is result or error; its id before that, or
# (as the TypeScript SDK writes it) the last key of the outer object.
_RESPONSE_HEAD = re.compile(rb'^\s*\{\s*(?:' + _META + rb')*"(?:result|error)"\s*:')
_ID_HEAD = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"[^"]*"\s*,\s*)?"id"\s*:\s*' + _ID)
_ID_TAIL = re.compile(rb'[,{]\s*"id"\s*:\s*' + _ID
                      + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"[^"]*"\s*)?\}\s*$')


@dataclass
class Dropped:
    """A line over the cap: its size, and its two ends (enough to find its id)."""

    size: int
    head: bytes
    tail: bytes


class LineSplitter:
    """Bytes in, whole lines (without the newline) or Dropped out, in linear time."""

    def __init__(self, cap: int = LINE_CAP) -> None:
        self.cap = cap
        self._parts: list[bytes] = []
        self._size = 0
        self._dropped: Dropped | None = None

    @property
    def pending(self) -> int:
        """Bytes of an unfinished line (what is lost if the stream ends now)."""
        return self._size

    def feed(self, chunk: bytes) -> list[bytes | Dropped]:
        out: list[bytes | Dropped] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._add(chunk[start:end])
            out.append(self._finish())
            start = end + 1
        if start < len(chunk):
            self._add(chunk[start:] if start else chunk)
        return out

    def _add(self, piece: bytes) -> None:
        if not piece:
            return
        self._size += len(piece)
        if (dropped := self._dropped) is not None:
            dropped.tail = piece[-KEEP:] if len(piece) >= KEEP else (dropped.tail + piece)[-KEEP:]
            return
        self._parts.append(piece)
        if self._size > self.cap:  # from here on only the ends are kept
            head = b"".join(self._parts[:1 + KEEP // max(1, len(self._parts[0]))])[:KEEP]
            tail = b"".join(self._parts[-2:])[-KEEP:]
            self._dropped, self._parts = Dropped(0, head, tail), []

    def _finish(self) -> bytes | Dropped:
        dropped, self._dropped = self._dropped, None
        size, self._size = self._size, 0
        if dropped is not None:
            dropped.size = size
            return dropped
        parts, self._parts = self._parts, []
        return parts[0] if len(parts) == 1 else b"".join(parts)


Parsed = tuple[SessionMessage | Exception, str | None]  # (for the session, what went wrong)


def parse(line: bytes, encoding: str, errors: str) -> Parsed:
    """One line as the session's message, or the error that says why it is not one."""
    try:
        text = line.decode(encoding, errors)
    except UnicodeDecodeError as e:
        return _bad(line, f"sent a line that is not valid {encoding} (byte {e.start})")
    try:
        if len(line) > THREAD_PARSE_OVER:
            # (this runs in a worker thread) json's scanner calls the hook for every object,
            # and each call is a chance for the event loop's thread to take the GIL, which
            # pydantic's parser would hold for the whole line.
            message = types.jsonrpc_message_adapter.validate_python(
                json.loads(text, object_hook=_same), by_name=False)
        else:
            message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except (ValueError, RecursionError) as e:
        return _bad(line, f"sent a line that is not a JSON-RPC message: {_first_line(e)}")
    return SessionMessage(message), None


def dropped(item: Dropped) -> Parsed:
    mb = item.size / (1 << 20)
    return _bad(item.head, f"sent a line over {LINE_CAP >> 20} MB ({mb:.1f} MB); dropped",
                item.tail)


class BadLine(ValueError):
    """A line from the server that kep could not use; the message says why, in one line."""


def _bad(head: bytes, why: str, tail: bytes | None = None) -> Parsed:
    """The answer to the request a bad line was meant for, when the line says which; else the
    invalid-message error the session passes on (and the pending request times out)."""
    tail = head[-KEEP:] if tail is None else tail
    head = head[:KEEP]
    rid = response_id(head, tail)
    if rid is None:
        return BadLine(why), why
    return SessionMessage(types.JSONRPCError(
        jsonrpc="2.0", id=rid, error=types.ErrorData(code=types.PARSE_ERROR, message=why))), why


def response_id(head: bytes, tail: bytes) -> int | str | None:
    """The id of the response whose line starts with `head` and ends with `tail`, or None
    (a request or notification of the server's own, or no id that can be read)."""
    if not _RESPONSE_HEAD.match(head):
        return None
    m = _ID_HEAD.match(head) or _ID_TAIL.search(tail)
    if m is None:
        return None
    try:
        value = json.loads(m.group(1))
    except ValueError:
        return None
    return value if isinstance(value, int | str) else None


def _same(obj: dict[str, Any]) -> dict[str, Any]:
    return obj


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:200] if text else type(error).__name__
