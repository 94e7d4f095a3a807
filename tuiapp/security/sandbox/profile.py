"""The resolved profile of one child: the default walls, `[sandbox]`, and the tool's or MCP
server's own `[sandbox.tools.NAME]` / `[sandbox.servers.NAME]` entry.

`[sandbox]` comes from kep.toml only when folder trust says so (tuiapp.config reads the
project file through trust), so a checkout cannot widen its own walls before it is trusted,
nor with entries it gained after."""

from __future__ import annotations

import functools
import hashlib
import os
import re
from pathlib import Path

from tuiapp.security import hidden as hidden_list
from tuiapp.security.sandbox import writable as writable_check
from tuiapp.security.sandbox.base import Network, Profile
from tuiapp.security.subpath import under
from tuiapp.settings import paths
from tuiapp.settings.config_types import SandboxConfig, SandboxRule

# Inside the root, kept read-only: what kep or git reads as code or rules, so a tool cannot
# plant a hook, a rule, a new tool or a prompt. `.envrc` is run by direnv on `cd`.
READONLY_NAMES: tuple[str, ...] = (
    ".git", "kep.toml", "mcp.json", ".mcp.json", "prompts", "functions", "functions.json",
    "extensions", "tools", "agents", ".envrc", ".gitmodules",
)
# The `.env` search below the root skips these (large, and never a project's own `.env`).
SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox",
                       ".mypy_cache", ".pytest_cache", "site-packages", "dist", "build"})
DOTENV_DEPTH = 4
DOTENV_DIRS = 2000  # folders looked at, at most, per search


def _abs(p: str | Path, root: Path) -> Path:
    q = Path(os.path.expanduser(str(p)))
    return Path(os.path.realpath(q if q.is_absolute() else root / q))


def dotenv_files(root: Path) -> list[Path]:
    """The project's `.env` files: the root's own and those a few folders down."""
    found: list[Path] = []
    todo = [(root, 0)]
    seen = 0
    while todo and seen < DOTENV_DIRS:
        folder, depth = todo.pop()
        seen += 1
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            if hidden_list.is_dotenv_name(e.name):
                found.append(Path(e.path))
            elif depth < DOTENV_DEPTH and e.name not in SKIP_DIRS and e.is_dir(
                    follow_symlinks=False):
                todo.append((Path(e.path), depth + 1))
    return sorted(found)


@functools.cache
def kep_install() -> list[Path]:
    """Where kep itself and its interpreter live (its package with the bundled functions, the
    venv, the base Python): shown read-only inside the walls even when they are under /tmp,
    which the private /tmp would hide (a checkout or CI clone there)."""
    import sys

    here = Path(__file__).resolve().parents[3]  # the folder holding tuiapp/
    places = [here, Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(),
              Path(os.path.realpath(sys.executable)).parent.parent]
    return list(dict.fromkeys(places))


def private_cache(tool: str | None = None, server: str | None = None) -> Path:
    """Runtimes' caches inside the sandbox (npm, pip, uv, XDG): kep's own, not the
    user's real ones, which stay read-only (a tool must not poison them for the user). One
    per tool and per MCP server: a cache is trusted by what reads it (pip installs a cached
    wheel as is), so a tool must not poison another's, which may have wider walls."""
    base = paths.cache_dir() / "sandbox-cache"
    if tool is None and server is None:
        return base / "shared"
    kind, name = ("tools", tool) if tool is not None else ("servers", server or "")
    # A readable name for the folder, and a hash so that names that read alike never share.
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:40].lstrip(".") or "_"
    return base / kind / f"{safe}-{hashlib.sha256(name.encode()).hexdigest()[:10]}"


_HIDDEN: dict[tuple[str | None, ...], tuple[Path, ...]] = {}
# What the hidden list is made of besides the configuration: the home and kep's folders.
_ENV = ("HOME", "KEP_CONFIG_DIR", "KEP_DATA_DIR", "KEP_STATE_DIR", "KEP_CACHE_DIR",
        "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")


def env_key() -> tuple[str | None, ...]:
    """What the hidden list and the private cache depend on besides the configuration."""
    return tuple(os.environ.get(v) for v in _ENV)


def resolved_hidden(extra: tuple[str, ...]) -> tuple[Path, ...]:
    """The hidden list with each path resolved: kept for the opened configuration (resolving
    ~40 paths at every call cost more than the sandbox's own start); forget() clears it when
    the configuration is set again."""
    key = (*extra, "\0", *env_key())
    if key not in _HIDDEN:
        _HIDDEN[key] = tuple(Path(os.path.realpath(p))
                             for p in hidden_list.hidden_paths(list(extra)))
    return _HIDDEN[key]


def forget() -> None:
    _HIDDEN.clear()


def resolve(settings: SandboxConfig, root: Path, *, tool: str | None = None,
            server: str | None = None, tool_dirs: tuple[str, ...] = (),
            call_files: tuple[Path, ...] = (), dotenvs: list[Path] | None = None) -> Profile:
    root = Path(os.path.realpath(root))
    rule: SandboxRule | None = None
    if tool is not None:
        rule = settings.tools.get(tool)
    elif server is not None:
        rule = settings.servers.get(server)
    network: Network = settings.network
    writable = list(settings.writable)
    extra_hidden = list(settings.hidden)
    if rule is not None:
        network = rule.network if rule.network is not None else network
        writable += rule.writable
        extra_hidden += rule.hidden
    readonly = [root / n for n in READONLY_NAMES]
    visible = []
    for d in tool_dirs:
        p = _abs(d, root)
        if p != root and under(p, root):
            readonly.append(p)
        elif p != root and p != Path("/"):
            visible.append(p)
    visible += [p for p in kep_install() if p != root and p != Path("/")]
    # Relative hidden entries are the project's (against the root, not kep's working folder).
    hidden = list(resolved_hidden(tuple(str(writable_check.lexical(h, root))
                                        for h in extra_hidden)))
    hidden += dotenvs if dotenvs is not None else dotenv_files(root)
    return Profile(
        root=root,
        readonly=tuple(dict.fromkeys(readonly)),
        hidden=tuple(dict.fromkeys(hidden)),
        # Not resolved here: links are followed, or the entry refused, at each call
        # (writable.py), since a tool can plant a link at an entry inside the root.
        writable=tuple(dict.fromkeys(writable_check.lexical(w, root) for w in writable)),
        visible=tuple(dict.fromkeys(visible)),
        network=network,
        cache=private_cache(tool, server),
        call_files=call_files,
        enabled=settings.enabled,
        required=settings.required,
    )
