"""Where a tool call's output goes: a capped copy for the model, a spool file, batched events.

Output is streamed as it arrives, batched so a flood stays a few hundred events (a batch every
50 ms or 64 KiB; a partial line waits at most one extra batch for its newline). The pieces of
one stream concatenate to the stream; a piece may end mid-line. The full stream goes to the
spool file (stderr lines marked "[stderr] "); the model gets at most `cap` bytes with a note
saying what was cut. Memory stays bounded whatever the tool prints.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from tuiapp.security.secrets import Secrets
from tuiapp.tools.proc import TailBuffer

Output = Callable[[str, str], None]  # (stream, text)

FLUSH_INTERVAL = 0.05
FLUSH_BYTES = 64 << 10
STDERR_KEEP = 8 << 10  # stderr tail kept for the model
STDERR_MARK = "[stderr] "
TAIL_KEEP = 1 << 20  # bytes of a cut spool's end kept in memory, written at close


class Capture:
    """First and last bytes of a stream, at most `cap` in all, plus the total size."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.head = bytearray()
        self.head_cap = cap - cap // 4
        self.tail = TailBuffer(cap // 4)
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail.add(data)

    @property
    def truncated(self) -> bool:
        return self.total > self.cap

    def text(self, note_where: str) -> str:
        if not self.truncated:
            return (bytes(self.head) + self.tail.value()).decode("utf-8", errors="replace")
        omitted = self.total - len(self.head) - len(self.tail.value())
        note = (
            f"\n[… output truncated: {omitted} bytes omitted of {self.total}, over the "
            f"{self.cap}-byte limit{note_where} …]\n"
        )
        return (
            self.head.decode("utf-8", errors="replace")
            + note
            + self.tail.value().decode("utf-8", errors="replace")
        )


class Batcher:
    """Coalesces output into few events, keeping lines whole when it can."""

    def __init__(self, out: Output) -> None:
        self.out = out
        self.segs: list[list[str]] = []  # [stream, text], in arrival order
        self.size = 0
        self.held: set[str] = set()  # streams whose partial line was held at the last flush
        self.last = time.monotonic()

    def add(self, stream: str, text: str) -> None:
        if not text:
            return
        if self.segs and self.segs[-1][0] == stream:
            self.segs[-1][1] += text
        else:
            self.segs.append([stream, text])
        self.size += len(text)
        if self.size >= FLUSH_BYTES or time.monotonic() - self.last >= FLUSH_INTERVAL:
            self.flush()

    def due_in(self) -> float | None:
        if not self.segs:
            return None
        return max(0.0, self.last + FLUSH_INTERVAL - time.monotonic())

    def flush(self, final: bool = False) -> None:
        segs, self.segs, self.size = self.segs, [], 0
        self.last = time.monotonic()
        keep: list[list[str]] = []
        held: set[str] = set()
        if not final:
            last_of = {seg[0]: i for i, seg in enumerate(segs)}
            for stream, i in last_of.items():
                text = segs[i][1]
                cut = text.rfind("\n") + 1
                tail = text[cut:]
                if tail and stream not in self.held and len(tail) < FLUSH_BYTES:
                    segs[i][1] = text[:cut]
                    keep.append([stream, tail])
                    held.add(stream)
        self.held = held
        for stream, text in segs:
            if text:
                self.out(stream, text)
        self.segs = keep
        self.size = sum(len(t) for _, t in keep)


class SpoolBudget:
    """Bytes the spool files of one session may still take (`[tools] spool_session_mb`)."""

    def __init__(self, limit: Callable[[], int], used: int = 0) -> None:
        self.limit = limit
        self.used = used

    def take(self, n: int) -> int:
        """Grant up to n bytes; what is granted counts as used."""
        grant = max(0, min(n, self.limit() - self.used))
        self.used += grant
        return grant


class Spool:
    """The whole interleaved stream on disk. A failing disk only loses the spool.

    Bounded: past `cap` bytes for this call (`[tools] spool_max_mb`), or once the session's
    budget is spent, only the last bytes are kept (at most TAIL_KEEP, in memory) and written
    at close after a line saying how much was left out. The head is never rewritten."""

    def __init__(
        self, path: Path, cap: int | None = None, budget: SpoolBudget | None = None
    ) -> None:
        self.path = path
        self.f: TextIO | None = None
        self.last_stream = ""
        self.at_bol = True
        self.broken = False
        self.cap = cap
        self.budget = budget
        self.tail_keep = min(TAIL_KEEP, cap // 4) if cap is not None else TAIL_KEEP
        self.head_room = cap - self.tail_keep if cap is not None else None
        self.written = 0
        self.tail: TailBuffer | None = None  # set once the head is full
        self.cut_by = ""
        self.omitted = 0  # bytes left out of the file (known at close)

    def write(self, stream: str, text: str) -> None:
        if not text or self.broken:
            return
        try:
            if self.f is None:
                self.f = open_private(self.path)
            if stream != self.last_stream and not self.at_bol:
                self._put("\n")
                self.at_bol = True
            self.last_stream = stream
            if stream == "stderr":
                body = text.replace("\n", "\n" + STDERR_MARK)
                if self.at_bol:
                    body = STDERR_MARK + body
                if text.endswith("\n"):
                    body = body[: -len(STDERR_MARK)]
                text = body
            self._put(text)
            self.at_bol = text.endswith("\n")
        except OSError:
            self.broken = True

    def _put(self, text: str) -> None:
        assert self.f is not None
        if self.tail is None:
            if self.head_room is None and self.budget is None:
                self.f.write(text)
                return
            data = text.encode("utf-8", errors="replace")
            room = len(data)
            if self.head_room is not None and self.written + room > self.head_room:
                room, self.cut_by = max(0, self.head_room - self.written), "per call"
            granted = room
            if self.budget is not None:
                granted = self.budget.take(room)
                if granted < room:
                    room, self.cut_by = granted, "per session"
            if room == len(data):
                self.f.write(text)
                self.written += room
                return
            nl = data.rfind(b"\n", 0, room)
            if nl >= 0:  # end the head on a whole line; the rest goes to the tail
                room = nl + 1
            elif self.written:
                room = 0
            if self.budget is not None:
                self.budget.used -= granted - room
            self.f.write(data[:room].decode("utf-8", errors="ignore"))
            self.written += room
            self.tail = TailBuffer(self.tail_keep)
            text = data[room:].decode("utf-8", errors="ignore")
        self.tail.add(text.encode("utf-8", errors="replace"))

    def output_note(self) -> str:
        """Appended to a truncation note for the model: where the output is, and whether that
        file has all of it (past the spool's limits it keeps the head and the tail only)."""
        if self.tail is None and not self.omitted:
            return f"; full output: {self.path}"
        cut = self.omitted if self.tail is None else self.tail.total - min(
            self.tail.total, self.tail_keep)
        limit = ("[tools] spool_max_mb" if self.cut_by == "per call"
                 else "[tools] spool_session_mb")
        return (f"; {self.path} keeps only the head and the tail of the output: "
                f"{cut} bytes cut there ({limit})")

    def close(self, footer: str) -> None:
        if self.tail is not None and self.f is not None and not self.broken:
            kept = self.tail.value()
            if self.budget is not None:
                kept = kept[len(kept) - self.budget.take(len(kept)):]
            if len(kept) < self.tail.total and b"\n" in kept[:-1]:
                kept = kept[kept.index(b"\n") + 1 :]  # start the tail on a whole line
            omitted = self.omitted = self.tail.total - len(kept)
            limit = ("[tools] spool_max_mb per call" if self.cut_by == "per call"
                     else "[tools] spool_session_mb for this session")
            note = (
                f"\n[kep: spool limit reached ({limit}): {omitted} bytes left out here; "
                f"the last {len(kept)} bytes follow]\n"
                if omitted
                else ""  # all of it fitted after all
            )
            with contextlib.suppress(OSError):
                self.f.write(note + kept.decode("utf-8", errors="ignore"))
            self.at_bol = kept.endswith(b"\n") or not kept
        self.head_room = self.budget = self.tail = None  # the footer always goes in
        self.write("kep", ("" if self.at_bol else "\n") + footer + "\n")
        if self.f is not None:
            with contextlib.suppress(OSError):
                self.f.close()


def open_private(path: Path) -> TextIO:
    """A spool file only its user can read (0600) in folders only they can enter (0700): tool
    output may hold anything. A link planted at the file's name is not followed."""
    missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):
            d.mkdir(mode=0o700)
    with contextlib.suppress(OSError):  # not ours to change: the file itself is still 0600
        os.chmod(path.parent, 0o700)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o600)
    os.fchmod(fd, 0o600)  # an older file of the same name keeps no wider mode
    return os.fdopen(fd, "w", encoding="utf-8", errors="replace")


class Sink:
    """Where a call's bytes go: the model's capture, the spool and the events."""

    def __init__(
        self, cap: int, spool: Spool, batcher: Batcher, secrets: Secrets | None = None
    ) -> None:
        self.stdout = Capture(cap)
        self.stderr = TailBuffer(STDERR_KEEP)
        self.spool = spool
        self.batcher = batcher
        self.decoders = {
            name: codecs.getincrementaldecoder("utf-8")(errors="replace")
            for name in ("stdout", "stderr")
        }
        # Keys are redacted first, so the capture, the spool and the panes never see one.
        self.secrets = secrets or Secrets()
        self.redactors = {name: self.secrets.stream() for name in ("stdout", "stderr")}

    def add_bytes(self, stream: str, data: bytes) -> None:
        self._bytes(stream, self.redactors[stream].feed(data))

    def fresh_capture(self) -> None:
        """The call runs again (a wider sandbox wall): what the model gets starts over; the
        pane and the spool keep both runs."""
        self.stdout = Capture(self.stdout.cap)
        self.stderr = TailBuffer(STDERR_KEEP)

    def _bytes(self, stream: str, data: bytes) -> None:
        (self.stdout if stream == "stdout" else self.stderr).add(data)
        self._text(stream, self.decoders[stream].decode(data))

    def add_text(self, stream: str, text: str) -> None:
        """For direct (in-process) formats, whose output is already text."""
        self.add_bytes(stream, text.encode("utf-8", errors="replace"))

    def end_input(self) -> None:
        """The streams ended: release the tail held back in case it started a key."""
        for stream, r in self.redactors.items():
            self._bytes(stream, r.flush())

    def _text(self, stream: str, text: str) -> None:
        self.spool.write(stream, text)
        self.batcher.add(stream, text)

    def close(self) -> None:
        self.end_input()
        for stream, dec in self.decoders.items():
            self._text(stream, dec.decode(b"", final=True))
        self.batcher.flush(final=True)


def cap_text(text: str, cap: int, where: str) -> str:
    """The model's share of an already whole text (e.g. a huge $LLM_OUTPUT): head, note, tail.
    `where`: Spool.output_note()."""
    data = text.encode("utf-8", errors="replace")
    head, tail = data[: cap - cap // 4], data[-(cap // 4) :] if cap >= 4 else b""
    omitted = len(data) - len(head) - len(tail)
    what = f"{omitted} bytes omitted of {len(data)}{where}"
    return (
        head.decode("utf-8", errors="replace")
        + f"\n[… output truncated: {what} …]\n"
        + tail.decode("utf-8", errors="replace")
    )


def read_capped(path: Path, cap: int) -> str | None:
    """$LLM_OUTPUT's text, never reading more than a bit over the cap into memory."""
    try:
        with path.open("rb") as f:
            data = f.read(cap + 4096)
            more = f.read(1)
    except OSError:
        return None
    text = data.decode("utf-8", errors="replace")
    if more:
        size = path.stat().st_size
        text += f"\n[… output truncated: the result file is {size} bytes …]"
    return text
