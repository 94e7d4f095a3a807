"""Folder trust: whether a project's own code, `.env`, MCP servers and kep.toml are in force.

The one place that decides it (ARCHITECTURE "Trust boundaries"); config loading, the registry,
the MCP client and the commands ask here and never check on their own. It is decided before
discovery: in an untrusted project kep lists no project tool (listing runs code), imports no
pack, starts no project server, reads no `.env` and ignores kep.toml; kep's bundled built-ins
and the user's own config still work.

Records live in the user's state dir (KEP_STATE_DIR overrides it), keyed by resolved real path.
Trusting a directory covers everything under it, as editors' "trust the parent folder" does.
A project trusted by its own path also records what its kep.toml and mcp.json allow without
asking (allow rules, approval default, MCP servers, provider tables): when that grows later,
the new entries are held back until the user trusts the project again. No Textual here.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tuiapp.security import project_items
from tuiapp.security.trust_items import (
    MCP_JSON,
    Inventory,
    Question,
    items_of,
    mcp_json_item,
    read_project_files,
    rule_item,
    withhold,
)
from tuiapp.settings import paths
from tuiapp.vocab.trust_state import TrustState

__all__ = [
    "Question", "TrustError", "TrustState", "accept_rule", "check", "forget",
    "mcp_json_allowed", "question", "records", "root_in_force", "state_of", "trust",
    "trust_for_run", "withhold",
]

STATE_FILE = "trust.json"
_RUN_TRUSTED: set[str] = set()  # `--trust`: for this process only, never written down


class TrustError(Exception):
    """The trust records cannot be read or written; the message is one line."""


def _real(root: Path | str) -> str:
    return os.path.realpath(os.path.expanduser(str(root)))


def _covers(base: str, path: str) -> bool:
    return path == base or path.startswith(base.rstrip(os.sep) + os.sep)


# ---- records -------------------------------------------------------------------------------


def _file() -> Path:
    return paths.state_dir() / STATE_FILE


def records_file() -> Path:
    """Where the trust records live (shown read-only to MCP servers inside the walls)."""
    return Path(os.path.realpath(_file()))


def records() -> dict[str, dict[str, Any]]:
    """Trusted directory → its record. Raises TrustError when the file is unreadable."""
    try:
        data = json.loads(_file().read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise TrustError(f"{_file()}: cannot read: {e.strerror}") from None
    except RecursionError:
        raise TrustError(f"{_file()}: nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise TrustError(f"{_file()}: not valid JSON: {e}") from None
    dirs = data.get("dirs") if isinstance(data, dict) else None
    if not isinstance(dirs, dict):
        raise TrustError(f'{_file()}: expected {{"dirs": {{PATH: {{…}}}}}}')
    return {k: v for k, v in dirs.items() if isinstance(k, str) and isinstance(v, dict)}


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """One writer at a time (two kep windows trusting at once must both be recorded)."""
    directory = paths.state_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(directory / (STATE_FILE + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        except ImportError:  # not POSIX: the atomic replace still keeps the file whole
            pass
        yield
    finally:
        os.close(fd)


def _save(dirs: Mapping[str, Any]) -> None:
    target = _file()
    import tempfile  # only when writing: every kep command reads this file

    fd, tmp = tempfile.mkstemp(prefix=f".{STATE_FILE}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:  # mkstemp: mode 0600, never a link
            json.dump({"version": 1, "dirs": dict(dirs)}, f, indent=1, ensure_ascii=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _update(change: Any) -> None:
    try:
        with _locked():
            try:
                dirs = records()
            except TrustError:
                dirs = {}  # an unreadable file is replaced rather than kept in the way
            change(dirs)
            _save(dirs)
    except OSError as e:
        raise TrustError(f"{_file()}: cannot write: {e.strerror or e}") from None


# ---- deciding ------------------------------------------------------------------------------


def check(root: Path | str) -> TrustState:
    """Is `root` trusted, by its own record, a parent's, or `--trust`? Never raises."""
    real = _real(root)
    if any(_covers(base, real) for base in _RUN_TRUSTED):
        return TrustState(real, True, "--trust")
    try:
        dirs = records()
    except TrustError as e:
        return TrustState(real, False, problem=str(e))
    own = dirs.get(real)
    if own is not None:
        accepted = frozenset(k for k in _items(own) if isinstance(k, str))
        items = all_items(Path(real))
        gained = tuple(label for key, label in items.items() if key not in accepted)
        return TrustState(real, True, real, accepted if gained else None, gained)
    for base in sorted(dirs, key=len, reverse=True):
        if _covers(base, real):
            return TrustState(real, True, base)
    return TrustState(real, False)


def all_items(root: Path) -> dict[str, str]:
    """key → label of everything the project at root brings that changes what kep runs or
    allows: kep.toml and mcp.json entries, .env variables kep reads, interpreters and
    programs it provides, and git config entries that name commands."""
    return {**items_of(*read_project_files(root)), **project_items.file_items(root)}


def _items(record: Mapping[str, Any]) -> list[Any]:
    items = record.get("items")
    return items if isinstance(items, list) else []  # a hand-edited record: nothing accepted


def state_of(config: Any) -> TrustState:
    """The decision a Config was loaded under (config.load sets it); for a Config built by
    hand, decided now from its project root."""
    state = getattr(config, "trust", None)
    return state if isinstance(state, TrustState) else check(config.project_root)


def trust_for_run(root: Path | str) -> None:
    """`--trust`: trust `root` (and below) in this process only."""
    _RUN_TRUSTED.add(_real(root))


def trust(root: Path | str) -> str:
    """Record `root` as trusted, with what its kep.toml and mcp.json allow now. Returns the
    real path. Raises TrustError (one line) when the record cannot be written."""
    real = _real(root)
    if real == os.path.dirname(real):
        raise TrustError(f"refusing to trust {real}: that would trust every folder")
    items = sorted(all_items(Path(real)))

    def change(dirs: dict[str, Any]) -> None:
        dirs[real] = {"trusted_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "items": items}

    _update(change)
    return real


def forget(root: Path | str) -> bool:
    """Remove the record of exactly `root`. True when there was one."""
    real = _real(root)
    found = False

    def change(dirs: dict[str, Any]) -> None:
        nonlocal found
        found = dirs.pop(real, None) is not None

    _update(change)
    return found


def accept_rule(root: Path | str, tool: str, action: str, args: str | None = None) -> None:
    """kep itself wrote this rule at the user's answer ("always"): it is part of what the user
    trusts, not a change to ask about again. Only a project's own record is touched."""
    real = _real(root)
    key, _label = rule_item(tool, action, args)
    if key is None:
        return

    def change(dirs: dict[str, Any]) -> None:
        own = dirs.get(real)
        if own is not None and key not in _items(own):
            own["items"] = sorted([*(k for k in _items(own) if isinstance(k, str)), key])

    with contextlib.suppress(TrustError):
        if real in records():
            _update(change)


def accept_setting(root: Path | str, table: str, name: str, old: Any, new: Any) -> None:
    """kep wrote `[table] name` (from `old` to `new`) at the user's answer ("always" to a
    network question): trusted in place of the old value, but only if that one was (an
    untrusted change stays untrusted)."""
    from tuiapp.security.trust_items import setting_item

    real = _real(root)
    new_key = setting_item(table, name, new)[0]
    old_key = setting_item(table, name, old)[0] if old is not None else None

    def change(dirs: dict[str, Any]) -> None:
        own = dirs.get(real)
        if own is None:
            return
        items = [k for k in _items(own) if isinstance(k, str)]
        if old_key is not None and old_key not in items:
            return
        own["items"] = sorted({*(k for k in items if k != old_key), new_key})

    with contextlib.suppress(TrustError):
        if real in records():
            _update(change)


# ---- what the rest of kep asks -------------------------------------------------------------


def root_in_force(config: Any, tool_root: Path | str) -> bool:
    """May the registry read (and so run) tools under `tool_root`? kep's bundled built-ins
    always; a folder the user's own config names by an absolute path always (an untrusted
    project's kep.toml is not read, so every configured source is the user's); anything else
    inside an untrusted project never."""
    state = state_of(config)
    if state.trusted:
        return True
    real = _real(tool_root)
    if real == _real(paths.builtin_functions_dir()):
        return True
    if not _covers(state.root, real):
        return True
    tools = config.tools
    named = [*tools.dirs, *(s.path for s in tools.sources)]
    return any(_covers(_real(p), real) for p in named if os.path.isabs(os.path.expanduser(p)))


def mcp_json_allowed(config: Any, name: str, command: str | None, args: tuple[str, ...],
                     env: Mapping[str, str], url: str | None) -> bool:
    """Is this mcp.json server in force (project trusted, and not gained since)?"""
    key, _label = mcp_json_item(name, command, list(args), dict(env), url)
    return state_of(config).allows(key)


def project_has_mcp_json(config: Any) -> bool:
    return state_of(config).trusted and (Path(config.project_root) / MCP_JSON).is_file()


def question(state: TrustState, contents: Inventory) -> Question | None:
    """Whether to ask the user about this project, given what it holds (counted by the
    opened project, which knows the tool formats), and with what."""
    if state.trusted and not state.gained:
        return None
    if not state.trusted and contents.empty():
        return None  # nothing a project could run here: no question to ask
    return Question(state.root, contents, state.gained)
