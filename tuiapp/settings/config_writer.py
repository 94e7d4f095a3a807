"""Writing config files: edited in place, keeping the user's comments and layout, and atomically
(toml_write; its libraries imported lazily, off the startup path),
remembering what kep wrote itself so hot reload can tell its own writes apart.
config data with its secrets hidden, for showing it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tuiapp.settings.config_reader import read_regular, read_toml
from tuiapp.settings.config_types import Action, Rule

# (path, size, mtime_ns) of the files kep itself wrote last, so hot reload can tell them apart.
_OWN_WRITES: dict[Path, tuple[int, int]] = {}


def _stat_key(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def written_by_kep(files: tuple[Path, ...]) -> bool:
    """Is the newest of these config files (the one a reload is about) exactly as kep last
    wrote it?"""
    stats = [(key, f) for f in files if (key := _stat_key(f)) is not None]
    if not stats:
        return False
    key, newest = max(stats, key=lambda kf: kf[0][1])
    return _OWN_WRITES.get(newest) == key


def write_toml_atomic(path: Path, data: Mapping[str, Any], edit: Any = None) -> Path:
    """Atomically, keeping the mode, through a symlink (see toml_write). With `edit` (text →
    text), the file's own text is edited so its comments and layout stay; `data` is what it
    must read as afterwards."""
    from tuiapp.settings import toml_write

    text = None
    if edit is not None and (raw := read_regular(path)) is not None:
        text = toml_write.edited(raw.decode("utf-8"), edit, data)
    written = toml_write.write_atomic(path, text if text is not None else toml_write.dumps(data))
    if (key := _stat_key(path)) is not None:
        _OWN_WRITES[path] = key
    return written


def note_own_write(path: Path) -> None:
    """`path` was just written by kep (not re-dumped through tomli_w): a reload it causes is
    kep's own."""
    if (key := _stat_key(path)) is not None:
        _OWN_WRITES[path] = key


def add_rule(file: Path, tool_regex: str, action: Action, args_regex: str | None = None, *,
             source: str = "", expires: str = "", modes: tuple[str, ...] = ()) -> Rule:
    """Put a rule at the front of `file`'s approval rules, atomically, as a
    `[[approval.rules]]` table. (A deny rule elsewhere still wins: see policy.) `source` is
    the call the rule came from: it is kept with the date in `comment` (a key, so it survives
    any writer); `expires` ("2h") counts from `added`; `modes` limits it to those approval
    modes (a grant never applies in a stricter mode)."""
    data = read_toml(file)
    rule: dict[str, Any] = {"tool": tool_regex, "action": action}
    if args_regex:
        rule["args"] = args_regex
    if source or expires:
        import datetime

        now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        rule["added"] = now.isoformat().replace("+00:00", "Z")
        if source:
            rule["comment"] = f"added by kep on {now:%Y-%m-%d} from the call {source}"
        if expires:
            rule["expires"] = expires
    if modes:
        rule["modes"] = list(modes)
    approval = dict(data.get("approval", {}))
    approval["rules"] = [rule, *approval.get("rules", [])]
    data["approval"] = approval
    from tuiapp.settings import toml_write

    write_toml_atomic(file, data, lambda text: toml_write.with_rule_first(text, rule))
    return Rule(tool_regex, action, args_regex, f"{file.name} rule 1", modes=modes)


def set_value(file: Path, key: str, value: Any) -> None:
    """Set a top-level key (e.g. theme, model) in a TOML file, atomically."""
    data = read_toml(file)
    data[key] = value
    from tuiapp.settings import toml_write

    write_toml_atomic(file, data, lambda text: toml_write.with_value(text, key, value))


def add_sandbox_host(file: Path, tool: str, host: str) -> tuple[Any, Any]:
    """Add `host` ("pypi.org:443") to `[sandbox.tools.TOOL] network` in `file` (a tool with
    `"ask"` or no list gets `[host]`: the others are still asked about; `"on"` stays)."""
    return add_sandbox_entry(file, tool, "network", host)


def add_sandbox_entry(file: Path, tool: str, key: str, value: str) -> tuple[Any, Any]:
    """Add `value` to the list `[sandbox.tools.TOOL] key` (network, writable) in `file`,
    atomically, comments kept. Returns `[sandbox] tools` before and after (None when there
    was none), for folder trust."""
    import copy

    data = read_toml(file)
    before = copy.deepcopy(data.get("sandbox", {}).get("tools")) if isinstance(
        data.get("sandbox"), dict) else None
    sandbox = dict(data.get("sandbox", {}))
    tools = dict(sandbox.get("tools", {}))
    entry = dict(tools.get(tool, {}))
    now = entry.get(key)
    if now == "on" or (isinstance(now, list) and value in now):
        return before, before
    entry[key] = [*(now if isinstance(now, list) else []), value]
    tools[tool] = entry
    sandbox["tools"] = tools
    data["sandbox"] = sandbox
    from tuiapp.settings import toml_write

    write_toml_atomic(file, data, lambda text: toml_write.with_sandbox_list(
        text, tool, key, entry[key]))
    return before, tools
