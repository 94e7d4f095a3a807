"""Reading TOML config files: bytes to data (one ConfigError for anything wrong), and a
TableReader that pulls typed values out of a table, naming file and dotted key on error and
noting the keys nobody asked for.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tuiapp.settings import file_reader  # the bounded reader of files kep does not control
from tuiapp.settings.config_types import ConfigError

MAX_DEPTH = file_reader.MAX_DEPTH
MAX_BYTES = file_reader.MAX_BYTES


def _config_error(e: file_reader.ProjectFileError) -> ConfigError:
    return ConfigError(e.path, e.key, e.reason)


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file's data ({} when it does not exist). Anything wrong with it, from bad bytes
    to nesting deep enough to exhaust the parser's stack, is one ConfigError."""
    try:
        return file_reader.read_toml(path) or {}
    except file_reader.ProjectFileError as e:
        raise _config_error(e) from None


def read_regular(path: Path, max_bytes: int = MAX_BYTES) -> bytes | None:
    """The bytes of a regular file, None when there is none: a FIFO, a link to /dev/zero or a
    file over `max_bytes` is one ConfigError, never a hang."""
    try:
        return file_reader.read_bytes(path, max_bytes)
    except file_reader.ProjectFileError as e:
        raise _config_error(e) from None


def deep_merge(low: Mapping[str, Any], high: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(low)
    for k, v in high.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = v
    return out


class TableReader:
    """Pulls typed values out of one table, naming file and dotted key on error.

    Readers made from one root share `readers`, so after a parse every key that no reader
    asked for is known: that is a misspelling or a setting kep does not have.
    """

    def __init__(
        self,
        file: Path | str,
        table: Mapping[str, Any],
        prefix: str = "",
        readers: list[TableReader] | None = None,
    ) -> None:
        self.file, self.table, self.prefix = file, table, prefix
        self.asked: set[str] = set()
        self.readers = readers if readers is not None else []
        self.readers.append(self)

    def child(self, table: Mapping[str, Any], prefix: str) -> TableReader:
        return TableReader(self.file, table, prefix, self.readers)

    def unknown_keys(self) -> list[str]:
        """Warnings for keys nobody read, each with the closest key that was read."""
        out = []
        for r in self.readers:
            known = sorted(r.asked)
            for key in r.table:
                if key in r.asked:
                    continue
                import difflib  # only when a key is unknown

                close = difflib.get_close_matches(str(key), known, n=1)
                hint = f"; did you mean `{close[0]}`?" if close else ""
                shown = short_key(f"{r.prefix}{key}")
                out.append(f"{self.file}: unknown key `{shown}` (ignored){hint}")
        return out

    def error(self, key: str, msg: str) -> ConfigError:
        return ConfigError(self.file, f"{self.prefix}{key}", msg)

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
        self.asked.add(key)
        if key not in self.table:
            return default
        v = self.table[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        # TOML ints are acceptable where floats are expected; bools are not numbers here.
        if float in kinds and isinstance(v, int) and not isinstance(v, bool):
            return float(v)
        if isinstance(v, float) and not math.isfinite(v):
            raise self.error(key, f"expected a finite number, got {v}")
        if isinstance(v, bool) and bool not in kinds:
            raise self.error(key, f"expected {kind_name(kinds)}, got a boolean")
        if not isinstance(v, kinds):
            raise self.error(key, f"expected {kind_name(kinds)}, got {type(v).__name__}")
        return v

    def choice(self, key: str, options: tuple[str, ...], default: str | None) -> Any:
        v = self.get(key, str, default)
        if v is not None and v not in options:
            raise self.error(key, f"must be one of {', '.join(options)}; got {v!r}")
        return v

    def regex(self, key: str, default: str | None = None) -> str | None:
        v = self.get(key, str, default)
        if v is not None:
            try:
                re.compile(v)
            except re.error as e:
                raise self.error(key, f"invalid regex {v!r}: {e}") from None
        return v

    def sub(self, key: str) -> TableReader:
        return self.child(self.get(key, dict, {}), f"{self.prefix}{key}.")

    def str_map(self, key: str) -> dict[str, str]:
        table = self.get(key, dict, {})
        for k, v in table.items():
            if not isinstance(v, str):
                raise self.error(f"{key}.{k}", "expected a string")
        return dict(table)


def short_key(key: str, limit: int = 80) -> str:
    """A key from a file as a warning shows it: a 2 MB key stays one short line."""
    return key if len(key) <= limit else f"{key[: limit - 1]}… ({len(key):,} characters)"


def kind_name(kinds: tuple[type, ...]) -> str:
    names = {
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "true/false",
        dict: "a table",
        list: "an array",
    }
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def positive_number(r: TableReader, key: str, default: float) -> float:
    v = r.get(key, float, default)
    if v <= 0:
        raise r.error(key, "must be positive")
    return v


def http_url(r: TableReader, key: str, default: str | None) -> str | None:
    """An http(s) URL with a host, checked here so a typo is one line, not an SDK traceback."""
    from urllib.parse import urlsplit

    v = r.get(key, str, default)
    if v is None or v == default:
        return v
    try:
        parts = urlsplit(v)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as e:
        raise r.error(key, f"not a valid URL {v!r}: {e}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise r.error(key, f"expected an http:// or https:// URL with a host, got {v!r}")
    if any(c.isspace() or ord(c) < 32 for c in v):
        raise r.error(key, f"a URL cannot contain spaces or control characters: {v!r}")
    return v


def count_at_least_one(r: TableReader, key: str, default: int) -> int:
    return max(1, int(positive_number(r, key, default)))  # 0.5 must not mean "none at all"


def glob_patterns(r: TableReader, key: str) -> tuple[str, ...]:
    v = r.get(key, list, [])
    if not all(isinstance(p, str) and p for p in v):
        raise r.error(key, 'expected an array of glob patterns, e.g. ["git_*"]')
    return tuple(v)


MCP_LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def mcp_log_level(r: TableReader) -> str | None:
    """[mcp.servers.NAME] log_level: one of the eight syslog levels MCP uses."""
    v = r.get("log_level", str)
    if v is not None and v not in MCP_LOG_LEVELS:
        raise r.error("log_level", f"must be one of {', '.join(MCP_LOG_LEVELS)}")
    return v
