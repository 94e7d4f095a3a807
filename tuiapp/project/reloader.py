"""Watcher batches → incremental registry refresh, config reload, theme refresh. No UI here.

The TUI, `kep functions --watch` and `kep mcp serve` each run one Reloader and react to its
callbacks (plain functions or coroutines):

    reloader = Reloader(workspace, on_tools=lambda diff: ..., on_config=..., on_ready=...)
    task = asyncio.create_task(reloader.run())
    ...
    reloader.stop(); await task          # or cancel the task: both leave no thread behind

A call already running is never touched (the runner holds its own spec); the next model
request reads `registry.tools` and `config.approval` afresh, so it sees the new state.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuiapp.project import config as project_config
from tuiapp.project.workspace import Workspace
from tuiapp.settings import config_types, paths
from tuiapp.tools.registry import Registry
from tuiapp.tools.schema import schema_error
from tuiapp.tools.watcher import Batch, Watcher
from tuiapp.vocab.events import RegistryChanged

Callback = Callable[..., Awaitable[Any] | Any]

# A file still broken after its batch is declared once more after this delay: an editor that
# keeps the file open ("Text file busy") or a save caught between truncate and write settles
# without sending another event.
RETRY_DELAY = 0.5


def default_theme_dirs() -> list[Path]:
    return [paths.bundled_themes_dir(), paths.user_themes_dir()]


@dataclass
class Reloader:
    workspace: Workspace
    on_tools: Callback | None = None  # (RegistryChanged): only non-empty diffs
    on_config: Callback | None = None  # (Config, None) applied | (None, ConfigError) kept old
    on_themes: Callback | None = None  # (): a theme file changed
    on_ready: Callback | None = None  # (): watching, and the registry is up to date
    theme_dirs: Callable[[], Iterable[Path]] = default_theme_dirs  # lambda: () to not watch
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    _watcher: Watcher = field(init=False)
    _retry: asyncio.Task[None] | None = field(default=None, init=False)
    _retry_paths: list[Path] = field(default_factory=list, init=False)
    _config_failed: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self._watcher = Watcher(
            tool_roots=lambda: watch_targets(self.workspace.registry),
            config_files=lambda: [self.workspace.config.project_file, paths.user_config_file()],
            theme_dirs=self.theme_dirs,
        )

    def stop(self) -> None:
        """End run() (from the event loop's thread)."""
        self._watcher.stop()

    async def run(self) -> None:
        try:
            async with contextlib.aclosing(self._watcher.batches()) as batches:
                async for batch in batches:
                    await self.handle(batch)
        finally:
            await self._cancel_retry()

    async def handle(self, batch: Batch) -> None:
        # A rescan follows a (re)built watch: the config may have changed unseen before it
        # (reloading an unchanged config is silent).
        if batch.config or batch.rescan:
            await self._reload_config()
        if batch.tools or batch.rescan or batch.config:
            await self._refresh(sorted(batch.tools))
        if batch.themes:
            await _call(self.on_themes)
        if batch.rescan and not self.ready.is_set():
            self.ready.set()
            await _call(self.on_ready)
            # The first edit validates a schema: import jsonschema now, off the event loop,
            # rather than stall the UI for it then.
            await asyncio.to_thread(schema_error, {"type": "object", "properties": {}})

    async def _refresh(self, changed: Sequence[Path]) -> None:
        # A pending retry is folded into this refresh.
        changed = sorted({*changed, *await self._cancel_retry()})
        registry = self.workspace.registry
        diff = await registry.refresh(changed)
        if not diff.is_empty():
            await _call(self.on_tools, diff)
        still_broken = _broken_among(registry, changed)
        if still_broken:
            self._retry = asyncio.create_task(self._retry_later(still_broken))

    async def _retry_later(self, changed: list[Path]) -> None:
        self._retry_paths = changed
        await asyncio.sleep(RETRY_DELAY)
        diff = await self.workspace.registry.refresh(changed)
        self._retry_paths = []
        if not diff.is_empty():
            await _call(self.on_tools, diff)

    async def _cancel_retry(self) -> list[Path]:
        """Cancel a pending retry; return the paths it had yet to refresh."""
        task, self._retry = self._retry, None
        if task is None or task.done():
            return []
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        pending, self._retry_paths = self._retry_paths, []
        return pending

    async def _reload_config(self) -> None:
        try:
            cfg = project_config.load(self.workspace.root)
        except config_types.ConfigError as e:
            self._config_failed = True
            await _call(self.on_config, None, e)  # the last good config stays in force
            return
        if cfg == self.workspace.config and not self._config_failed:
            return  # already in force (saved unchanged, or applied by whoever wrote it)
        self._config_failed = False
        self.workspace.reconfigure(cfg)
        await _call(self.on_config, cfg, None)
        # New roots are followed by the watcher (it plans again after this batch); settings
        # that change declarations (built-ins, interpreters) show in the refresh that follows.


def watch_targets(registry: Registry) -> list[tuple[Path, bool]]:
    """Every format's roots, each with whether its subtree matters (see Watcher)."""
    ctx = registry.context()
    out: dict[Path, bool] = {}
    for fmt in registry.formats:
        for root in fmt.roots(ctx):
            out[root] = out.get(root, False) or fmt.watch_recursive(root)
    return list(out.items())


def _broken_among(registry: Registry, changed: Sequence[Path]) -> list[Path]:
    wanted = {os.path.realpath(p): p for p in changed}
    return [wanted[real] for b in registry.broken
            if (real := os.path.realpath(b.source)) in wanted]


async def _call(cb: Callback | None, *args: Any) -> None:
    if cb is None:
        return
    result = cb(*args)
    if inspect.isawaitable(result):
        await result


def describe(diff: RegistryChanged, registry: Registry, root: Path | None = None) -> str:
    """One line for people: "added x; changed y; broken z (reason); …"."""
    reasons = broken_reasons(diff, registry)
    parts = []
    for label in ("added", "changed", "removed", "recovered"):
        items = [_short(i, root) for i in getattr(diff, label)]
        if items:
            parts.append(f"{label} {', '.join(items)}")
    if diff.broken:
        parts.append("broken " + ", ".join(
            f"{_short(s, root)} ({reasons[s]})" if s in reasons else _short(s, root)
            for s in diff.broken))
    return "; ".join(parts) or "no change"


def broken_reasons(diff: RegistryChanged, registry: Registry) -> dict[str, str]:
    """source → why, for the sources this diff reports broken (first reason per source)."""
    out: dict[str, str] = {}
    for b in registry.broken:
        if b.source in diff.broken:
            out.setdefault(b.source, b.error)
    return out


def _short(item: str, root: Path | None) -> str:
    if root is not None and os.sep in item:
        with contextlib.suppress(ValueError):
            return str(Path(item).relative_to(root))
    return item

