"""Declaration cache: what each tool file declared, keyed by its stat, in the user cache dir.

One small JSON file per (format, root directory), holding exactly that root's current files, so
the warm path is a stat per candidate plus one read per root, and stale entries vanish on the
next write. Entries are trusted as validated (they were, when declared): nothing here imports
jsonschema. A missing, corrupt or unwritable cache only costs speed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import zlib
from pathlib import Path
from typing import Any

from tuiapp import __version__
from tuiapp.settings import paths

# Bump when what declare() produces changes meaning; kep's version is part of it too.
CACHE_VERSION = f"1/{__version__}"

# (size, mtime_ns, mode, format salt). The mode is there so chmod +x re-declares a file.
Key = tuple[int, int, int, str]


def stat_key(st: os.stat_result, salt: str = "") -> Key:
    return (st.st_size, st.st_mtime_ns, st.st_mode, salt)


class DeclarationCache:
    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or paths.cache_dir() / "declarations"

    def _file(self, fmt: str, root: Path) -> Path:
        # Readable and cheap (hashlib costs more to import than the whole warm lookup).
        tail = re.sub(r"[^A-Za-z0-9]+", "_", str(root))[-60:]
        crc = zlib.crc32(f"{fmt}\0{root}".encode("utf-8", "surrogateescape"))
        return self.directory / f"{fmt}-{tail}-{crc:08x}.json"

    def load(self, fmt: str, root: Path) -> dict[str, dict[str, Any]]:
        """path → {"key": [...], "tools": [...]} or {"key": [...], "error": "..."}."""
        try:
            # surrogateescape: a path that is not valid UTF-8 is still a path
            data = json.loads(self._file(fmt, root).read_bytes().decode("utf-8",
                                                                       "surrogateescape"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
            return {}
        if data.get("root") != str(root) or data.get("format") != fmt:
            return {}
        files = data.get("files")
        return files if isinstance(files, dict) else {}

    def save(self, fmt: str, root: Path, files: dict[str, dict[str, Any]]) -> None:
        data = {"version": CACHE_VERSION, "format": fmt, "root": str(root), "files": files}
        import tempfile  # only when writing: the warm path reads

        target = self._file(fmt, root)
        try:
            # dumps, not dump: dump always runs the pure-Python encoder
            text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".decl-", suffix=".tmp", dir=self.directory)
            try:
                with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
                    f.write(text)
                os.replace(tmp, target)  # concurrent kep processes: last writer wins, whole
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except (OSError, TypeError, ValueError):
            pass  # a read-only cache dir (or data JSON cannot hold) costs speed, nothing else


def key_matches(entry: dict[str, Any], key: Key) -> bool:
    stored = entry.get("key")
    return isinstance(stored, list) and tuple(stored) == key
