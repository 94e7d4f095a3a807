"""The one secrets filter: finds every run of text that gives away a secret value, in any text
or byte stream that leaves kep.

What counts as giving a value away (`Index`):

- any WINDOW (12) or more consecutive bytes of it, not only the whole value: a file read at an
  offset, a `cut`, a line wrapped in the middle of a key all still show 12 of its characters;
- the same in its encodings: base64 (standard and URL-safe, at each of the 3 alignments a value
  can have inside a longer encoded blob, so `base64 .env` is caught), hex (lower and upper
  case), percent-encoding (as URLs and forms carry it) and JSON string escaping.
- values of WHOLE_MIN (8) to WINDOW-1 characters only whole and as they are: a 12-character
  window of so short a value is the value, and their encodings or pieces are too short to tell
  from ordinary text. Shorter values ("1", "true") are never redacted (their variables are
  still kept from children: secrets.child_env).

A match is replaced by a label naming the variable; the union of all matching windows is one
match, so a key with a few characters cut off either end is still one `[redacted NAME]`.

Speed (a 10 MB tool output must cost well under 100 ms): the text is scanned as bytes. Runs of
bytes that occur in some secret form are found with C-level `translate` + `find` (ordinary
text has few runs of 12 or more such bytes); inside a run, 8-byte grams sampled every 4 bytes
(every 12-byte window holds one whole) are looked up in a set of the forms' 8-grams, in C,
through a memoryview cast. Only a hit is checked in Python, against the set of 12-byte windows.
tests/bench/redact.py measures it against a plain scan.

No imports from the rest of kep: this is the bottom of the security layer.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import quote, quote_plus

WINDOW = 12  # a run this long of a secret (or of an encoding of it) is redacted
WHOLE_MIN = 8  # values shorter than WINDOW but at least this long are redacted whole only
GRAM = 8  # bytes of a sampled gram (one machine word)
STEP = 4  # sampled every STEP bytes; STEP + GRAM <= WINDOW, so every window holds a gram
BLOCK = 8192  # grams tested at once before looking for which one hit
VECTOR_MIN = 32 << 10  # from this size on, the grams are looked up by numpy, all at once
# The table of which gram hashes occur: ~32 entries a gram (a miss ends there 97 times in 100),
# but small enough to stay in the CPU's cache.
_HASH_BITS = (12, 22)
_MULT = 0x9E3779B97F4A7C15  # Fibonacci hashing: the top bits of gram * _MULT
CARRY_CAP = 1 << 20  # a held-back match longer than this is let out (redacted) anyway
_ORDER = sys.byteorder  # memoryview.cast("Q") reads words in the machine's order
_B64_URL = bytes.maketrans(b"+/", b"-_")
_PCT = re.compile(rb"%[0-9A-F]{2}")


def _stable_b64(raw: bytes, align: int) -> bytes:
    """The characters of base64(`align` unknown bytes + raw + unknown bytes) that depend only on
    raw: a value inside a longer blob shows exactly these, whatever surrounds it."""
    enc = base64.b64encode(b"\0" * align + raw)
    first = -(-8 * align // 6)  # the first character with no bit of the bytes before
    last = (8 * (align + len(raw))) // 6  # one past the last with no bit of the bytes after
    return enc[first:last]


def forms(value: str) -> list[bytes]:
    """Every way `value` is looked for, as bytes (duplicates and forms shorter than WINDOW
    left out)."""
    raw = value.encode("utf-8", "surrogatepass")
    out = [raw, raw.hex().encode(), raw.hex().upper().encode()]
    for align in range(3):
        b64 = _stable_b64(raw, align)
        out += [b64, b64.translate(_B64_URL)]
    for pct in {quote(value, safe=""), quote(value), quote_plus(value, safe="")}:
        upper = pct.encode()
        out += [upper, _PCT.sub(lambda m: m.group().lower(), upper)]
    out.append(json.dumps(value)[1:-1].encode())
    seen: dict[bytes, None] = {}
    for f in out:
        if len(f) >= WINDOW:
            seen.setdefault(f)
    return list(seen)


class Index:
    """Every secret value's forms, indexed for `spans`. Immutable once built; build it once per
    set of values (secrets.Secrets does)."""

    def __init__(self, values: Iterable[tuple[str, str]]) -> None:
        """`values`: (value, label), most important first (a window two values share is
        labelled with the first)."""
        self.labels: list[str] = []
        self.full: dict[bytes, int] = {}  # every form of every value ≥ WINDOW: its label
        whole: dict[bytes, int] = {}
        held: set[int] = set()
        for value, label in values:
            raw = value.encode("utf-8", "surrogatepass")
            if len(raw) < WHOLE_MIN:
                continue
            self.labels.append(label)
            n = len(self.labels) - 1
            held.update(raw)
            if len(raw) < WINDOW:
                whole.setdefault(raw, n)
                continue
            for form in forms(value):
                self.full.setdefault(form, n)
        alphabet = set().union(*self.full) if self.full else set()
        self.whole = whole
        ordered = sorted(whole, key=len, reverse=True)  # the longest of two that overlap wins
        self._whole_rx = re.compile(b"|".join(map(re.escape, ordered))) if whole else None
        # translate() table: a byte of some form -> "a", any other -> "."
        self._runs = bytes(0x61 if b in alphabet else 0x2E for b in range(256))
        self.held = frozenset(held | alphabet)
        self.empty = not self.full and not whole
        # Built when first needed (most filters only ever see short texts, or none at all).
        self._windows: dict[bytes, int] | None = None
        self._grams: set[int] | None = None
        self._vector: tuple[Any, Any, Any] | None = None  # (hash table, sorted grams, shift)

    @property
    def windows(self) -> dict[bytes, int]:
        """Every WINDOW bytes of every form → the label of the first value that has it."""
        if self._windows is None:
            self._windows = {f[i:i + WINDOW]: n for f, n in reversed(self.full.items())
                             for i in range(len(f) - WINDOW + 1)}
        return self._windows

    @property
    def grams(self) -> set[int]:
        """Every GRAM bytes of every form, as the machine word memoryview.cast reads."""
        if self._grams is None:
            self._grams = {int.from_bytes(f[i:i + GRAM], _ORDER) for f in self.full
                           for i in range(len(f) - GRAM + 1)}
        return self._grams

    # ---- finding -----------------------------------------------------------------------------

    def spans(self, buf: bytes) -> list[tuple[int, int, int]]:
        """(start, end, label number) of every run of `buf` to redact, in order, not
        overlapping. Adjacent runs stay apart (a key printed twice is two labels)."""
        if self.empty or not buf:
            return []
        found: list[tuple[int, int, int]] = []
        if self.full and len(buf) >= VECTOR_MIN:
            for at in self._vector_hits(buf):
                self._check(buf, at, 0, len(buf), found)
        elif self.full and len(buf) >= WINDOW:
            for start, end in self._alphabet_runs(buf):
                self._scan_run(buf, start, end, found)
        if self._whole_rx is not None:
            found += ((m.start(), m.end(), self.whole[m.group()])
                      for m in self._whole_rx.finditer(buf))
        if not found:
            return found
        # A window two values share is labelled with the first; a whole value, with its own.
        return [(s, e, self.full.get(buf[s:e], n)) for s, e, n in _merged(found)]

    def _alphabet_runs(self, buf: bytes) -> Iterator[tuple[int, int]]:
        marks = buf.translate(self._runs)
        probe = b"a" * WINDOW
        pos, n = 0, len(buf)
        while (start := marks.find(probe, pos)) != -1:
            end = marks.find(b".", start + WINDOW)
            end = n if end == -1 else end
            yield start, end
            pos = end

    def _scan_run(self, buf: bytes, start: int, end: int, found: list[tuple[int, int, int]]
                  ) -> None:
        mv = memoryview(buf)
        grams = self.grams
        for phase in (0, STEP):  # words at start, start+8, … and at start+4, start+12, …
            first = start + phase
            count = (end - first) // GRAM
            if count <= 0:
                continue
            words = mv[first:first + count * GRAM].cast("Q")
            for b in range(0, count, BLOCK):
                block = words[b:b + BLOCK].tolist()
                if grams.isdisjoint(block):
                    continue
                for k, word in enumerate(block):
                    if word in grams:
                        self._check(buf, first + (b + k) * GRAM, start, end, found)

    def _vector_hits(self, buf: bytes) -> list[int]:
        """Where a sampled gram of `buf` is a gram of some form: the words at every STEP bytes
        (two views, offsets 0 and 4, no copy) hashed into the table, and the few that land on
        a used entry checked exactly."""
        import numpy as np  # here: kep starts without it, most outputs never need it

        if self._vector is None:
            bits = min(max((len(self.grams) * 32).bit_length(), _HASH_BITS[0]), _HASH_BITS[1])
            known = np.array(sorted(self.grams), dtype=np.uint64)
            table = np.zeros(1 << bits, dtype=np.bool_)
            shift = np.uint64(64 - bits)
            table[(known * np.uint64(_MULT)) >> shift] = True
            self._vector = (table, known, shift)
        table, known, shift = self._vector
        hits: list[int] = []
        for phase in (0, STEP):
            count = (len(buf) - phase) // GRAM
            if count <= 0:
                continue
            words = np.frombuffer(buf, dtype=np.uint64, count=count, offset=phase)
            maybe = np.flatnonzero(table[(words * np.uint64(_MULT)) >> shift])
            if maybe.size:
                values = words[maybe]
                at = np.minimum(np.searchsorted(known, values), len(known) - 1)
                sure = maybe[known[at] == values]
                hits += (sure * GRAM + phase).tolist()
        hits.sort()
        return hits

    def _check(self, buf: bytes, at: int, start: int, end: int,
               found: list[tuple[int, int, int]]) -> None:
        """A gram at `at` is in some form: which windows holding it are whole windows of one?"""
        for i in range(max(start, at + GRAM - WINDOW), min(at, end - WINDOW) + 1):
            n = self.windows.get(buf[i:i + WINDOW])
            if n is not None:
                found.append((i, i + WINDOW, n))


def _merged(found: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    found.sort()
    out = [found[0]]
    for start, end, n in found[1:]:
        s, e, m = out[-1]
        if start < e:  # overlapping: one match (labelled as it began)
            if end > e:
                out[-1] = (s, end, m)
        else:
            out.append((start, end, n))
    return out


def _widen(buf: bytes, start: int, end: int) -> tuple[int, int]:
    """A span widened to whole UTF-8 characters, so redacting never leaves half of one."""
    while start > 0 and 0x80 <= buf[start] < 0xC0:
        start -= 1
    while end < len(buf) and 0x80 <= buf[end] < 0xC0:
        end += 1
    return start, end


def render(buf: bytes, spans: list[tuple[int, int, int]], labels: list[bytes]) -> bytes:
    """`buf` with each span replaced by its label."""
    out: list[bytes] = []
    pos = 0
    for start, end, n in spans:
        start, end = _widen(buf, max(start, pos), end)
        out += [buf[pos:start], labels[n]]
        pos = end
    out.append(buf[pos:])
    return b"".join(out)


class Filter:
    """The filter for one set of values: whole texts and byte strings, and streams."""

    def __init__(self, values: Iterable[tuple[str, str]]) -> None:
        self.index = Index(values)
        self._labels = [f"[redacted {label}]".encode() for label in self.index.labels]

    @property
    def empty(self) -> bool:
        return self.index.empty

    def redact_bytes(self, data: bytes) -> bytes:
        spans = self.index.spans(data)
        return render(data, spans, self._labels) if spans else data

    def redact(self, text: str) -> str:
        if self.index.empty or not text:
            return text
        data = text.encode("utf-8", "surrogatepass")  # lone surrogates survive the round trip
        spans = self.index.spans(data)
        if not spans:
            return text
        return render(data, spans, self._labels).decode("utf-8", "surrogatepass")

    def contains_bytes(self, data: bytes) -> bool:
        return bool(self.index.spans(data))

    def contains(self, text: str) -> bool:
        return not self.index.empty and bool(
            text and self.index.spans(text.encode("utf-8", "surrogatepass")))

    def stream(self) -> StreamFilter:
        return StreamFilter(self)


class StreamFilter:
    """A byte stream in chunks, redacted as a whole would be: a secret split across chunks is
    still caught. Held back: only a tail that could begin or continue a match (at most
    WINDOW-1 bytes of secret bytes, or a match that reaches the end of what arrived), so
    ordinary output (a line ending in a newline) streams without delay."""

    def __init__(self, f: Filter) -> None:
        self.f = f
        self.carry = b""

    def feed(self, data: bytes) -> bytes:
        if self.f.empty:
            return data
        buf = self.carry + data
        n = len(buf)
        held = self.f.index.held
        cut = n
        while cut > n - (WINDOW - 1) and cut > 0 and buf[cut - 1] in held:
            cut -= 1
        spans = self.f.index.spans(buf)
        for start, end, _ in reversed(spans):
            if end <= cut:
                break
            if n - start > CARRY_CAP:  # no end in sight: let it out, redacted
                cut = end
                break
            cut = start  # it may go on in the next chunk: keep it whole
        done = [s for s in spans if s[1] <= cut]
        self.carry = buf[cut:]
        return render(buf[:cut], done, self.f._labels) if done else buf[:cut]

    def flush(self) -> bytes:
        rest, self.carry = self.carry, b""
        return self.f.redact_bytes(rest)
