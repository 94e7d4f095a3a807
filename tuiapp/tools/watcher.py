"""Watch tool directories, config files and theme dirs; yield coalesced batches of changes.

No UI here: the TUI, `kep functions --watch` and `kep mcp serve` all consume the same batches.

watchfiles' Rust notifier does the watching, each instance in a thread of our own rather than
through `awatch`: awatch sets up the (recursive) inotify watches on the event-loop thread, which
stalls a UI on a large tree, and runs in anyio's worker pool, whose idle threads outlive the
watch by up to 10 s. Here stop() ends every thread before `batches()` returns.

Tool directories are watched recursively unless their format reads only their direct entries
(a project root taken as a tools dir must not mean inotify watches on all of .venv), theme
directories recursively; config files' directories, the directory of a root that is a file,
and the nearest existing parent of a root that does not exist yet are watched flat. After each
batch the plan is computed again (a missing dir appeared, one was deleted, the config named
new dirs): when it differs, the watch is rebuilt and a `rescan` batch tells the consumer to
stat everything, covering changes made while no watch was set.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from watchfiles._rust_notify import RustNotify

# Editors' swap, backup and temp files (vim, emacs, kate, JetBrains, atomic writers), macOS junk.
_IGNORED_NAME = re.compile(
    r"(\.sw[a-p]x?|~|\.tmp|\.kate-swp|\.bak|___jb_(tmp|old)___)$|^\.#|^#.*#$|^4913$|^\.DS_Store$"
)
# Never tools, and often huge or busy (our own bytecode, VCS internals, dependency trees).
_IGNORED_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn", "node_modules", ".venv",
                           ".mypy_cache", ".pytest_cache", ".ruff_cache"})

# step: quiet time that ends a burst (a change is reported 1-2 steps after it happens);
# debounce: the longest a continuous burst is held before it is reported anyway.
STEP_MS = 25
DEBOUNCE_MS = 400
POLL_DELAY_MS = 300  # only when inotify is unavailable or exhausted

Changes = set[tuple[int, str]]
ToolRoot = Path | tuple[Path, bool]  # a path (watched recursively) or (path, recursive)


@dataclass(frozen=True)
class Batch:
    tools: frozenset[Path] = frozenset()  # changed paths under tool roots (files or dirs)
    config: bool = False  # kep.toml or the user config.toml changed
    themes: bool = False  # something under a theme dir changed
    rescan: bool = False  # the watch was (re)built: stat everything, changes may be unseen

    def __bool__(self) -> bool:
        return bool(self.tools) or self.config or self.themes or self.rescan


def ignored(path: str | Path, bases: Iterable[Path] = ()) -> bool:
    """Swap/backup/temp names, and anything inside __pycache__, .git, node_modules… below
    the watched directory (the watched directory's own path may contain such parts)."""
    p = Path(path)
    if _IGNORED_NAME.search(p.name):
        return True
    parts = p.parts
    for base in bases:
        if p == base or base in p.parents:
            parts = p.parts[len(base.parts):]
            break
    return any(part in _IGNORED_DIRS for part in parts)


@dataclass(frozen=True)
class _Plan:
    tools: tuple[Path, ...]
    configs: tuple[Path, ...]
    themes: tuple[Path, ...]
    recursive: tuple[Path, ...]
    flat: tuple[Path, ...]
    # Identity of each watched dir: one deleted and created again needs a new watch.
    inodes: tuple[tuple[int, int], ...] = ()


def _real(p: Path) -> Path:
    return Path(os.path.realpath(p))


def _make_plan(tools: Iterable[ToolRoot], configs: Iterable[Path], themes: Iterable[Path]
               ) -> _Plan:
    tools, themes = list(tools), list(themes)
    wanted: dict[Path, bool] = {}  # root → recursive (recursive wins on a duplicate)
    for item in (*tools, *((t, True) for t in themes)):
        path, deep = item if isinstance(item, tuple) else (item, True)
        wanted[_real(path)] = wanted.get(_real(path), False) or deep
    recursive: list[Path] = []
    flat: list[Path] = []
    for p, deep in wanted.items():
        if p.is_dir():
            (recursive if deep else flat).append(p)
        else:  # a file root (watched through its dir: editors replace files), or missing
            flat.append(_existing_parent(p.parent))
    tools_r = tuple(_real(t[0] if isinstance(t, tuple) else t) for t in tools)
    themes_r = tuple(_real(p) for p in themes)
    configs_r = tuple(dict.fromkeys(_real(p) for p in configs))
    flat += [_existing_parent(c.parent) for c in configs_r]
    # A dir inside a recursively watched one is covered already.
    recursive = [p for p in dict.fromkeys(recursive) if not _under_any(p, recursive, strict=True)]
    flat = [p for p in dict.fromkeys(flat) if not _under_any(p, recursive)]
    return _Plan(tools_r, configs_r, themes_r, tuple(recursive), tuple(flat),
                 tuple(_inode(p) for p in (*recursive, *flat)))


def _inode(p: Path) -> tuple[int, int]:
    try:
        st = p.stat()
    except OSError:
        return (0, 0)
    return (st.st_dev, st.st_ino)


def _existing_parent(p: Path) -> Path:
    while not p.is_dir() and p.parent != p:
        p = p.parent
    return p


def _under_any(p: Path, roots: Iterable[Path], strict: bool = False) -> bool:
    return any((p == r and not strict) or r in p.parents for r in roots)


def _classify(changes: Changes, plan: _Plan) -> Batch:
    tool_paths: set[Path] = set()
    config = theme = False
    for _change, raw in changes:
        p = Path(raw)
        if p in plan.configs:
            config = True
        elif _under_any(p, plan.themes):
            theme = True
        elif _under_any(p, plan.tools):
            tool_paths.add(p)
    return Batch(frozenset(tool_paths), config, theme)


class _Notifier:
    """One RustNotify (recursive or flat) in a thread of its own, feeding `deliver`."""

    def __init__(self, paths: tuple[Path, ...], recursive: bool, step_ms: int, debounce_ms: int,
                 deliver: Callable[[Changes], None]) -> None:
        self.paths, self.recursive = paths, recursive
        self.step_ms, self.debounce_ms = step_ms, debounce_ms
        self._deliver = deliver
        self._loop = asyncio.get_running_loop()
        self._stop = threading.Event()
        self.started: asyncio.Future[None] = self._loop.create_future()
        self.finished: asyncio.Future[None] = self._loop.create_future()
        kind = "tree" if recursive else "flat"
        self._thread = threading.Thread(target=self._run, name=f"kep-watch-{kind}", daemon=True)
        self._running = False

    def start(self) -> None:
        self._thread.start()
        self._running = True

    def stop(self) -> None:
        self._stop.set()  # watch() checks it every step

    async def join(self) -> None:
        self.stop()
        if not self._running:
            return
        try:
            await asyncio.shield(self.finished)
        except asyncio.CancelledError:
            # Cancelled ourselves: still leave no thread behind (it ends within a step).
            self._thread.join(2)
            raise
        self._thread.join(1)

    def _run(self) -> None:
        try:
            notify = _open_notify(self.paths, self.recursive)
        except Exception as e:  # a path vanished, no inotify…: the watcher decides
            self._post(self.started, e)
            self._post(self.finished, None)
            return
        try:
            with notify:
                self._post(self.started, None)
                while not self._stop.is_set():
                    try:
                        raw = notify.watch(self.debounce_ms, self.step_ms, 0, self._stop)
                    except RuntimeError as e:
                        # A changed file whose name is not UTF-8 (watchfiles cannot name
                        # it, WatchfilesRustInternalError): that batch is lost, the watch
                        # goes on. Anything else ends it, as before.
                        if "decode path" not in str(e):
                            raise
                        continue
                    if isinstance(raw, set):
                        kept = {(c, p) for c, p in raw if not ignored(p, self.paths)}
                        if kept:
                            self._call(self._deliver, kept)
        finally:
            self._post(self.finished, None)

    def _post(self, fut: asyncio.Future[None], error: BaseException | None) -> None:
        def settle() -> None:
            if not fut.done():
                if error is None:
                    fut.set_result(None)
                else:
                    fut.set_exception(error)

        self._call(settle)

    def _call(self, fn: Callable[..., None], *args: object) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is listening
            self._loop.call_soon_threadsafe(fn, *args)


def _polling() -> bool:
    """As watchfiles decides: WATCHFILES_FORCE_POLLING, else on by itself only on WSL (whose
    Windows-side files send no inotify events)."""
    forced = os.environ.get("WATCHFILES_FORCE_POLLING", "")
    if forced:
        return forced.lower() not in {"false", "disable", "disabled"}
    uname = platform.uname()
    return uname.system.lower() == "linux" and "microsoft-standard" in uname.release.lower()


def _open_notify(paths: tuple[Path, ...], recursive: bool) -> RustNotify:
    strs = [str(p) for p in paths]
    polling = _polling()
    try:
        return RustNotify(strs, False, polling, POLL_DELAY_MS, recursive, True)
    except FileNotFoundError:
        raise
    except OSError:
        if polling:
            raise
        # inotify watch limit reached (a huge tree): polling still works, just slower.
        return RustNotify(strs, False, True, POLL_DELAY_MS, recursive, True)


@dataclass
class Watcher:
    """The callables are asked again whenever the plan is recomputed, so new `[tools] dirs`,
    a newly created `extensions/` or a deleted root are followed."""

    tool_roots: Callable[[], Iterable[ToolRoot]]
    config_files: Callable[[], Iterable[Path]] = lambda: ()
    theme_dirs: Callable[[], Iterable[Path]] = lambda: ()
    step_ms: int = STEP_MS
    debounce_ms: int = DEBOUNCE_MS
    ready: asyncio.Event = field(default_factory=asyncio.Event)  # set once the watch is in place
    _stopped: bool = False
    _queue: asyncio.Queue[Changes | None] | None = None

    def stop(self) -> None:
        """Make `batches()` end (call from the event loop's thread)."""
        self._stopped = True
        if self._queue is not None:
            self._queue.put_nowait(None)

    def _plan(self) -> _Plan:
        return _make_plan(self.tool_roots(), self.config_files(), self.theme_dirs())

    async def batches(self) -> AsyncIterator[Batch]:
        """Batches until stop(). The first one (rescan) says the watch is in place; another
        rescan follows every rebuild. Use with contextlib.aclosing() so an early exit ends
        the threads at once."""
        while not self._stopped:
            plan = self._plan()
            queue: asyncio.Queue[Changes | None] = asyncio.Queue()
            notifiers = [
                _Notifier(paths, recursive, self.step_ms, self.debounce_ms, queue.put_nowait)
                for paths, recursive in ((plan.recursive, True), (plan.flat, False)) if paths
            ]
            self._queue = queue
            try:
                for n in notifiers:
                    n.start()
                errors = [e for e in await asyncio.gather(*(n.started for n in notifiers),
                                                          return_exceptions=True) if e]
                if errors:
                    if all(isinstance(e, FileNotFoundError) for e in errors):
                        await asyncio.sleep(self.step_ms / 1000)  # a dir vanished: plan again
                        continue
                    raise errors[0]
                self.ready.set()
                yield Batch(rescan=True)
                while not self._stopped:
                    changes = await _take_all(queue)
                    if changes is None:
                        break
                    batch = _classify(changes, plan)
                    if batch:
                        yield batch
                    # Asked after the consumer handled the batch (a config reload may have
                    # changed the roots by then).
                    if self._plan() != plan:
                        break
            finally:
                self._queue = None
                await asyncio.gather(*(n.join() for n in notifiers))


async def _take_all(queue: asyncio.Queue[Changes | None]) -> Changes | None:
    """The next changes, merged with any others already waiting (one batch per burst)."""
    first = await queue.get()
    if first is None:
        return None
    merged = set(first)
    while not queue.empty():
        more = queue.get_nowait()
        if more is None:
            queue.put_nowait(None)  # stop after this batch
            break
        merged |= more
    return merged
