"""Every tool kep knows: files declared by the formats, plus external sources (MCP servers).

A refresh lists each format's roots (cheap), reuses what it knows for files whose (size,
mtime_ns, mode, salt) did not change, in memory or on disk, and declares only the rest (in
parallel, bounded, each with a timeout): an unchanged tree spawns nothing.

Name clashes: sources are ordered (project files, configured dirs, external sources, kep's
built-ins; by format, root, sorted path) and the first wins. A loser is broken, except a
built-in shadowed by a project tool: overriding a built-in by name is a feature."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from tuiapp.security import secrets, trust
from tuiapp.settings import paths
from tuiapp.settings.config_types import Config
from tuiapp.tools.cache import DeclarationCache, Key, key_matches, stat_key
from tuiapp.tools.formats.base import FormatContext, Lister, ToolFormat, ToolLoadError
from tuiapp.vocab.tool_specs import BrokenTool, ToolSpec

if TYPE_CHECKING:  # asyncio and the events cost more to import than a whole warm refresh
    import asyncio

    from tuiapp.vocab.events import RegistryChanged

Entry = ToolSpec | BrokenTool
OUTER_TIMEOUT_MARGIN = 5.0  # on top of list_timeout, for a format that hangs in-process


@dataclass
class _File:
    path: Path
    fmt: ToolFormat
    order: tuple[int, int, int]  # (builtin, format index, root index)
    root: Path
    key: Key
    tools: list[ToolSpec] = field(default_factory=list)
    error: str | None = None
    transient: bool = False  # error not worth caching

    def cache_entry(self) -> dict[str, Any]:
        if self.error is not None:
            return {"key": list(self.key), "error": self.error}
        return {
            "key": list(self.key),
            "tools": [
                {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                    "run": t.run,
                }
                for t in self.tools
            ],
        }


def _from_cache(
    entry: dict[str, Any], fmt: ToolFormat, path: Path
) -> tuple[list[ToolSpec], str | None]:
    if "error" in entry:
        return [], str(entry["error"])
    source, name = str(path), fmt.name
    return [
        ToolSpec(t["name"], t["description"], t["parameters"], name, source,
                 run=t.get("run") or {})
        for t in entry.get("tools", [])
    ], None


async def _no_lister(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("refresh_from_cache() runs nothing")


def _one_line(text: str, limit: int = 400) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class Registry:
    def __init__(
        self,
        config: Config,
        *,
        formats: list[ToolFormat] | None = None,
        cache: DeclarationCache | None = None,
    ) -> None:
        if formats is None:
            from tuiapp.tools.formats import default_formats

            formats = default_formats()
        self.config = config
        self.formats = formats
        self.cache = cache or DeclarationCache()
        self._files: dict[tuple[str, str], _File] = {}  # (format, path) → state
        self._external: dict[str, list[Entry]] = {}
        self._tools: dict[str, ToolSpec] = {}
        # Agents' own tools by (agent, name): each agent's `read_file` is no clash (tools_for)
        self._agent_tools: dict[tuple[str, str], ToolSpec] = {}
        self._broken: list[BrokenTool] = []
        self._disk: dict[tuple[str, str], dict[str, list[Any]]] = {}  # what each cache file holds
        self._lock: asyncio.Lock | None = None

    # ---- views -------------------------------------------------------------------------

    @property
    def tools(self) -> Mapping[str, ToolSpec]:
        return MappingProxyType(self._tools)

    @property
    def broken(self) -> list[BrokenTool]:
        return list(self._broken)

    def tools_for(self, agent: str | None) -> dict[str, ToolSpec]:
        """The tools a session sees: every tool that belongs to no agent, plus the active
        agent's own (which win over a shared tool of the same name). A tool marked
        `agents_only` (a Loki tool its enabled_tools leaves out) is offered to agents only."""
        out = {n: s for n, s in self._tools.items()
               if not s.run.get("agent") and (agent or not s.run.get("agents_only"))}
        if agent:
            out.update({n: s for (a, n), s in self._agent_tools.items() if a == agent})
        return out

    def entries(self) -> list[Entry]:
        """Everything, for display: ok tools by name, then broken entries by source."""
        shown = {id(t) for t in self._tools.values()}
        others = [t for t in self._agent_tools.values() if id(t) not in shown]
        ok: list[Entry] = sorted([*self._tools.values(), *others], key=lambda t: t.name)
        bad: list[Entry] = sorted(self._broken, key=lambda b: (b.source, b.error))
        return ok + bad

    def context(self, lister: Lister | None = None) -> FormatContext:
        if lister is None:
            from tuiapp.tools.proc import run_collect

            lister = run_collect
        # Discovery runs project code too: it gets no keys either.
        env = secrets.child_env(self.config)
        return FormatContext(self.config.project_root, self.config, lister, env)

    def watch_roots(self) -> list[Path]:
        ctx = self.context(_no_lister)  # listing roots runs nothing (and needs no asyncio)
        roots: list[Path] = []
        for fmt in self.formats:
            roots.extend(r for r in fmt.roots(ctx) if r not in roots)
        return roots

    def reconfigure(self, config: Config) -> None:
        """New settings (roots, timeouts, built-ins on/off) apply from the next refresh()."""
        self.config = config
        from tuiapp.security.sandbox import spawn  # here: a warm listing starts nothing

        spawn.use_config(config)

    # ---- changes -------------------------------------------------------------------------

    def set_external(self, key: str, items: list[Entry]) -> RegistryChanged:
        """Tools that are not files (an MCP server's); an empty list removes the source."""
        before = self._snapshot()
        if items:
            self._external[key] = list(items)
        else:
            self._external.pop(key, None)
        self._resolve()
        return self._diff(before)

    def refresh_from_cache(self) -> bool:
        """The warm path, without an event loop or a process: a full scan that succeeds only
        when every candidate is already known (in memory or in the on-disk cache). True: the
        registry is up to date. False: something must be declared; call refresh(). Not to be
        called while refresh() runs."""
        files, todo, roots_seen = self._scan(self.context(_no_lister), set())
        if todo:
            return False
        self._files = files
        self._save_disk(roots_seen)  # removed files leave the cache
        self._resolve()
        return True

    def keys_are_files_alone(self) -> bool:
        """No tool file's cache key holds anything but the file's own stat (no salt: nothing
        from interpreters, .env files or other files went into a declaration)."""
        return all(not f.key[3] for f in self._files.values())

    async def refresh(self, paths: Iterable[Path] | None = None) -> RegistryChanged:
        """Rescan. `paths`: files known to have changed; they are declared again even if
        their stat looks the same. None: a full scan, trusting unchanged stats."""
        import asyncio

        from tuiapp.security.sandbox import spawn  # listing runs children: walls for this config

        spawn.use_config(self.config)

        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            before = self._snapshot()
            await self._rescan(paths)
            self._resolve()
            return self._diff(before)

    async def _rescan(self, changed: Iterable[Path] | None) -> None:
        import asyncio

        ctx = self.context()
        # Changed paths as the watcher reports them (real dir + name) and fully resolved.
        force = {q for p in changed or () for q in (
            os.path.realpath(p), os.path.join(os.path.realpath(os.path.dirname(p)),
                                              os.path.basename(p)))}
        # Listing and stat-ing thousands of files takes a while: not on the event loop (the
        # TUI's), which stays responsive; declaring is async already.
        files, todo, roots_seen = await asyncio.to_thread(self._scan, ctx, force)
        if todo:
            await self._declare_all(todo, ctx)
        self._files = files
        await asyncio.to_thread(self._save_disk, roots_seen)

    def _scan(self, ctx: FormatContext, force: set[str]
              ) -> tuple[dict[tuple[str, str], _File], list[_File], list[tuple[ToolFormat, Path]]]:
        """Every candidate with its stat key; the ones to declare again in `todo`."""
        builtin_dir = os.path.realpath(paths.builtin_functions_dir())
        project_dir = os.path.realpath(self.config.project_root / "prompts" / "functions")
        files: dict[tuple[str, str], _File] = {}
        todo: list[_File] = []
        roots_seen: list[tuple[ToolFormat, Path]] = []
        for fi, fmt in enumerate(self.formats):
            for ri, root in enumerate(fmt.roots(ctx)):
                if not trust.root_in_force(self.config, root):
                    continue  # an untrusted project's files: listing them would run them
                real_root = os.path.realpath(root)
                builtin = real_root == builtin_dir and real_root != project_dir
                roots_seen.append((fmt, root))
                root_s = str(root)
                disk: dict[str, dict[str, Any]] | None = None
                for path, st in fmt.stat_candidates(root):
                    key = stat_key(st, fmt.cache_salt(path, ctx))
                    state = _File(path, fmt, (int(builtin), fi, ri), root, key)
                    p = str(path)
                    files[(fmt.name, p)] = state
                    # realpath per file would cost more than the whole stat pass
                    if force and (real_root + p[len(root_s):] if p.startswith(root_s)
                                  else p) in force:
                        todo.append(state)
                        continue
                    old = self._files.get((fmt.name, p))
                    if old is not None and old.key == key and not old.transient:
                        state.tools, state.error = old.tools, old.error
                        continue
                    if disk is None:
                        disk = self._load_disk(fmt, root)
                    entry = disk.get(p)
                    try:
                        if entry is None or not key_matches(entry, key):
                            raise LookupError
                        state.tools, state.error = _from_cache(entry, fmt, path)
                    except (LookupError, TypeError, AttributeError):  # a miss, or a mangled entry
                        todo.append(state)
        return files, todo, roots_seen

    def _load_disk(self, fmt: ToolFormat, root: Path) -> dict[str, dict[str, Any]]:
        entries = self.cache.load(fmt.name, root)
        self._disk[(fmt.name, str(root))] = {p: e.get("key") for p, e in entries.items()}
        return entries

    def _save_disk(self, roots: list[tuple[ToolFormat, Path]]) -> None:
        for fmt, root in roots:
            mine = {
                str(f.path): f
                for f in self._files.values()
                if f.fmt is fmt and f.root == root and not f.transient
            }
            view = {p: list(f.key) for p, f in mine.items()}
            slot = (fmt.name, str(root))
            if slot not in self._disk:
                self._load_disk(fmt, root)
            if self._disk[slot] == view:
                continue
            self.cache.save(fmt.name, root, {p: f.cache_entry() for p, f in mine.items()})
            self._disk[slot] = view

    async def _declare_all(self, todo: list[_File], ctx: FormatContext) -> None:
        import asyncio

        from tuiapp.tools.forkserver import ForkingLister

        lister = ForkingLister(ctx.project_root, ctx.env)
        ctx = FormatContext(ctx.project_root, ctx.config, lister, ctx.env)
        sem = asyncio.Semaphore(max(1, self.config.tools.list_concurrency))
        timeout = self.config.tools.list_timeout + OUTER_TIMEOUT_MARGIN

        async def one(state: _File) -> None:
            async with sem:
                try:
                    async with asyncio.timeout(timeout):
                        state.tools = await state.fmt.declare(state.path, ctx)
                    state.error = None
                except ToolLoadError as e:
                    state.tools, state.error = [], _one_line(str(e))
                    state.transient = e.transient
                except TimeoutError:
                    state.tools, state.error = [], f"reading this file took over {timeout:g} s"
                    state.transient = True
                except Exception as e:  # a format bug must not take the registry down
                    state.tools = []
                    state.error = _one_line(
                        f"internal error reading this file: {type(e).__name__}: {e}"
                    )
                    state.transient = True

        try:
            executable = [s.path for s in todo if os.access(s.path, os.X_OK)]
            await lister.prepare(executable, self.config.tools.list_timeout)
            await asyncio.gather(*(one(s) for s in todo))
        finally:
            await lister.close()

    # ---- resolution ----------------------------------------------------------------------

    def _resolve(self) -> None:
        tools: dict[str, ToolSpec] = {}
        agent_tools: dict[tuple[str, str], ToolSpec] = {}
        from_builtin: dict[str, bool] = {}
        broken: list[BrokenTool] = []

        def offer(spec: ToolSpec, builtin: bool) -> None:
            agent = spec.run.get("agent")
            if agent:
                key = (str(agent), spec.name)
                if key in agent_tools:
                    broken.append(BrokenTool(spec.source, spec.format,
                                             f"duplicate of {spec.name} from "
                                             f"{agent_tools[key].source}"))
                    return
                agent_tools[key] = spec
            winner = tools.get(spec.name)
            if winner is not None and agent and winner.run.get("agent") not in (None, agent):
                return  # another agent's tool of that name: each agent sees its own
            if winner is None:
                tools[spec.name] = spec
                from_builtin[spec.name] = builtin
            elif not (builtin and not from_builtin[spec.name]):  # a project override is fine
                broken.append(
                    BrokenTool(
                        spec.source, spec.format, f"duplicate of {spec.name} from {winner.source}"
                    )
                )

        def take_file(f: _File) -> None:
            if f.error is not None:
                broken.append(BrokenTool(str(f.path), f.fmt.name, f.error))
            for spec in f.tools:
                offer(spec, bool(f.order[0]))

        ordered = sorted(self._files.values(), key=lambda f: (f.order, str(f.path)))
        for f in ordered:
            if not f.order[0]:
                take_file(f)
        for key in sorted(self._external):
            for item in self._external[key]:
                if isinstance(item, BrokenTool):
                    broken.append(item)
                else:
                    offer(item, False)
        for f in ordered:
            if f.order[0]:
                take_file(f)
        self._tools = tools
        self._agent_tools = agent_tools
        self._broken = broken

    def _snapshot(self) -> tuple[dict[str, ToolSpec], set[str]]:
        return dict(self._tools), {b.source for b in self._broken}

    def _diff(self, before: tuple[dict[str, ToolSpec], set[str]]) -> RegistryChanged:
        from tuiapp.vocab.events import RegistryChanged

        old_tools, old_broken = before
        new_broken = {b.source for b in self._broken}
        sources = {t.source for t in self._tools.values()}
        return RegistryChanged(
            added=tuple(sorted(self._tools.keys() - old_tools.keys())),
            changed=tuple(
                sorted(
                    n
                    for n in self._tools.keys() & old_tools.keys()
                    if self._tools[n] != old_tools[n] or self._tools[n].run != old_tools[n].run
                )
            ),
            # Tools gone, and broken files gone (a deleted broken file is a change too).
            removed=tuple(sorted(old_tools.keys() - self._tools.keys())) + tuple(sorted(
                s for s in old_broken - new_broken - sources if not s.startswith("mcp:"))),
            broken=tuple(sorted(new_broken - old_broken)),
            recovered=tuple(sorted((old_broken - new_broken) & sources)),
        )
