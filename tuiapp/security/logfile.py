"""The log files kep writes (an MCP server's stderr and notices in logs/mcp-NAME.log, the MCP
SDK's warnings in logs/mcp-sdk.log): owner-only, filtered and capped.

- Mode 0600 in a 0700 folder, opened without following a link: a log holds what servers print,
  which is often more than they should.
- Every byte passes the secrets filter (a stream filter for the server's stderr, so a key split
  across two reads is still caught); nothing writes to the file any other way (no fileno).
- Capped at CAP (1 MiB): a server chatty for days cannot fill the disk. The log is read for
  two things, its head (kep's start line and the server's process group) and its tail (the
  last stderr lines, the exit status), so past the cap the middle goes: the file is cut back
  to its first HEAD bytes, a marker line says how much was dropped, and writing goes on. 1 MiB
  holds thousands of lines of diagnosis, and one per server is nothing on any disk.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

CAP = 1 << 20
HEAD = 4096


class _Stream(Protocol):
    def feed(self, data: bytes) -> bytes: ...
    def flush(self) -> bytes: ...


class _Filter(Protocol):
    def redact_bytes(self, data: bytes) -> bytes: ...
    def stream(self) -> _Stream: ...


def private_dir(path: Path) -> Path:
    """`path` made (or tightened) to a folder only its owner can enter."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)  # made by an older kep with the umask's mode
    return path


class LogFile:
    """One log file, started afresh (the previous run's is replaced), or appended to."""

    def __init__(self, path: Path, secrets: Callable[[], _Filter], cap: int = CAP,
                 append: bool = False) -> None:
        private_dir(path.parent)
        flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        flags |= os.O_APPEND if append else os.O_TRUNC  # appending: a cut still ends at EOF
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o600)
        os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT
        self.path = path
        self._f = os.fdopen(fd, "ab" if append else "wb")
        self._secrets = secrets
        self._stream: _Stream | None = None
        self._cap = max(cap, 2 * HEAD)
        self._size = os.fstat(fd).st_size
        self._dropped = 0

    def write(self, text: str) -> int:
        """A line of kep's own (or a server's notice): filtered whole."""
        pending = self._stream.flush() if self._stream is not None else b""
        self._put(pending + self._secrets().redact_bytes(text.encode("utf-8", "replace")))
        return len(text)

    def write_bytes(self, data: bytes) -> None:
        """A piece of the server's stderr, as it arrived."""
        if self._stream is None:
            self._stream = self._secrets().stream()
        self._put(self._stream.feed(data))

    def flush(self) -> None:
        with contextlib.suppress(ValueError, OSError):
            self._f.flush()

    def close(self) -> None:
        if self._stream is not None:
            self._put(self._stream.flush())
            self._stream = None
        with contextlib.suppress(ValueError, OSError):
            self._f.close()

    @property
    def closed(self) -> bool:
        return self._f.closed

    def _put(self, data: bytes) -> None:
        if not data or self._f.closed:
            return
        with contextlib.suppress(ValueError, OSError):  # a full disk loses log lines, not kep
            if self._size + len(data) > self._cap:
                keep = min(self._size, HEAD)
                self._dropped += self._size - keep
                room = self._cap - keep - 200
                if len(data) > room:
                    self._dropped += len(data) - room
                    data = data[-room:]
                marker = (f"\n# kep: {self._dropped} bytes of this log dropped here "
                          f"(logs are capped at {self._cap} bytes)\n").encode()
                self._f.flush()
                self._f.seek(keep)
                self._f.truncate()
                self._f.write(marker)
                self._size = keep + len(marker)
            self._f.write(data)
            self._size += len(data)


class LogHandler(logging.Handler):
    """Python logging into a LogFile (the SDK's warnings)."""

    def __init__(self, path: Path, secrets: Callable[[], _Filter], cap: int = CAP) -> None:
        super().__init__()
        self._path, self._secrets, self._cap = path, secrets, cap
        self._log: LogFile | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self._log is None:  # opened on the first record, like FileHandler(delay=True)
                self._log = LogFile(self._path, self._secrets, self._cap, append=True)
            self._log.write(self.format(record) + "\n")
            self._log.flush()
        except Exception:  # never to stderr: that is the TUI's screen
            return

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
        super().close()
