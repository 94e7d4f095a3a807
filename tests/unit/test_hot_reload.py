"""Hot reload: editors' save patterns, broken-then-fixed, config edits, clean shutdown.

The same save patterns run through `kep functions --watch --json` (a subprocess, as a user or
a script would use it) and through the Reloader/registry API. Every wait is bounded and waits
for an event; nothing asserts on time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import KEP, kep_env, write_tool

from tuiapp.conversation.conversation import allow_all
from tuiapp.project import config as project_config
from tuiapp.project.reloader import Reloader
from tuiapp.project.workspace import Workspace
from tuiapp.providers.base import Provider, StreamEnd, StreamItem
from tuiapp.settings import config_types
from tuiapp.settings.config_types import ConfigError, ProviderConfig
from tuiapp.tools.watcher import Batch, Watcher, ignored
from tuiapp.vocab.events import Event, RegistryChanged, ToolCallDecided, ToolFinished
from tuiapp.vocab.messages import Message, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

REPO = Path(__file__).resolve().parents[2]
WAIT = 15.0  # upper bound for any one wait (a slow CI box), never a timing assertion

TOOL = """#!/bin/sh
if [ "$1" = --list-functions ]; then
  P='"parameters":{"type":"object","properties":{}}'
  echo '[{"name":"%(name)s","description":"%(desc)s",'"$P}]"
  exit 0
fi
echo "ran %(name)s"
"""


def tool_text(name: str, desc: str = "does things") -> str:
    return TOOL % {"name": name, "desc": desc}


# ---- what the watch reported so far ------------------------------------------------------

@dataclass
class Tracker:
    """Tool names and broken sources, as the reported diffs say they are."""

    names: set[str] = field(default_factory=set)
    broken: dict[str, str] = field(default_factory=dict)  # source → reason ("" if unknown)
    events: list[dict[str, Any]] = field(default_factory=list)

    def apply(self, ev: dict[str, Any]) -> None:
        self.events.append(ev)
        self.names |= set(ev.get("added", ()))
        self.names -= set(ev.get("removed", ()))
        for src in ev.get("broken", ()):
            self.broken[src] = ev.get("errors", {}).get(src, "")
        for src in ev.get("recovered", ()):
            self.broken.pop(src, None)

    def broken_named(self, name: str) -> str | None:
        return next((why for src, why in self.broken.items() if src.endswith("/" + name)), None)


def diff_dict(diff: RegistryChanged, ws: Workspace) -> dict[str, Any]:
    reasons = {b.source: b.error for b in ws.registry.broken}
    d: dict[str, Any] = {k: list(getattr(diff, k)) for k in
                         ("added", "changed", "removed", "broken", "recovered")}
    d["errors"] = {s: reasons.get(s, "") for s in diff.broken}
    return d


def mentions(new: list[dict[str, Any]], key: str, name: str) -> bool:
    return any(name in ev.get(key, ()) for ev in new)


# ---- the save patterns ---------------------------------------------------------------------

Check = Callable[[Tracker, list[dict[str, Any]]], bool]


@dataclass
class Step:
    label: str
    act: Callable[[Path], None]  # gets the project root
    done: Check


def fn_dir(root: Path) -> Path:
    return root / "prompts" / "functions"


def rename_into_place(root: Path) -> None:
    tmp = fn_dir(root) / "a.sh.tmp"  # an atomic writer's temp name (ignored by the watch)
    tmp.write_text(tool_text("a", "version 2"))
    tmp.chmod(0o755)
    os.replace(tmp, fn_dir(root) / "a.sh")


def truncate_then_write(root: Path) -> None:
    with (fn_dir(root) / "a.sh").open("r+") as f:
        f.truncate(0)
        f.flush()
        f.write(tool_text("a", "version 3"))


def create_without_exec_bit(root: Path) -> None:
    (fn_dir(root) / "b.sh").write_text(tool_text("b"))  # 0o644: a forgotten chmod +x


def chmod_x(root: Path) -> None:
    (fn_dir(root) / "b.sh").chmod(0o755)


def delete(root: Path) -> None:
    (fn_dir(root) / "a.sh").unlink()


def new_configured_dir(root: Path) -> None:
    write_tool(root / "more" / "tools" / "c.sh", tool_text("c"))  # mkdir -p, then the file


def edit_in_configured_dir(root: Path) -> None:
    (root / "more" / "tools" / "c.sh").write_text(tool_text("c", "version 2"))


def move_pack_dir_in(root: Path) -> None:
    staging = root.parent / "staging" / "weather"
    shutil.copytree(REPO / "tests/fixtures/extensions/extensions/plain", staging)
    os.rename(staging, root / "extensions" / "weather")  # a whole subdirectory at once


STEPS = [
    Step("write-to-temp-then-rename", rename_into_place,
         lambda t, new: mentions(new, "changed", "a") and "a" in t.names),
    Step("truncate-then-write", truncate_then_write,
         lambda t, new: (mentions(new, "changed", "a") or mentions(new, "recovered", "a.sh")
                         or mentions(new, "added", "a"))
         and "a" in t.names and t.broken_named("a.sh") is None),
    Step("created without exec bit", create_without_exec_bit,
         lambda t, new: "not executable" in (t.broken_named("b.sh") or "")),
    Step("chmod +x after creation", chmod_x,
         lambda t, new: "b" in t.names and t.broken_named("b.sh") is None),
    Step("delete", delete, lambda t, new: mentions(new, "removed", "a") and "a" not in t.names),
    Step("a configured dir created later", new_configured_dir, lambda t, new: "c" in t.names),
    Step("an edit in that dir", edit_in_configured_dir,
         lambda t, new: mentions(new, "changed", "c")),  # the watch now covers it
    Step("a subdirectory moved in whole", move_pack_dir_in,
         lambda t, new: "WEATHER_GET_now" in t.names),
]


def make_project(project: Path) -> Path:
    (project / "kep.toml").write_text('[tools]\nbuiltins = false\ndirs = ["more/tools"]\n')
    (project / "extensions").mkdir()
    write_tool(fn_dir(project) / "a.sh", tool_text("a", "version 1"))
    return project


# ---- through `kep functions --watch --json` ------------------------------------------------

class WatchProcess:
    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(
            [*KEP, "functions", "--watch", "--json", "--project", str(root)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=kep_env(),
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def next_event(self, deadline: float) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError("no event from kep functions --watch in time") from None
        if line is None:
            raise AssertionError(f"kep functions --watch ended: {self.stderr()}")
        return json.loads(line)

    def wait(self, tracker: Tracker, done: Check, what: str) -> None:
        deadline = time.monotonic() + WAIT
        new: list[dict[str, Any]] = []
        while not done(tracker, new):
            ev = self.next_event(deadline)
            tracker.apply(ev)
            new.append(ev)

    def stop(self, sig: int = signal.SIGINT) -> int:
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(WAIT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()

    def stderr(self) -> str:
        assert self.proc.stderr is not None
        return self.proc.stderr.read() if self.proc.poll() is not None else ""


@pytest.mark.slow
def test_save_patterns_through_kep_functions_watch(project: Path) -> None:
    root = make_project(project)
    watch = WatchProcess(root)
    try:
        ready = watch.next_event(time.monotonic() + WAIT)
        assert ready == {"ready": True, "tools": 1, "broken": 0}
        tracker = Tracker(names={"a"})
        for step in STEPS:
            step.act(root)
            watch.wait(tracker, step.done, step.label)
        # A config edit is an event too; a bad one names file and key.
        (root / "kep.toml").write_text('[tools]\nbuiltins = false\ntimeout = "soon"\n')
        ev = watch.next_event(time.monotonic() + WAIT)
        assert ev["config_error"].startswith(f"{root / 'kep.toml'}: tools.timeout: ")
        (root / "kep.toml").write_text('[tools]\nbuiltins = false\ndirs = ["more/tools"]\n')
        assert watch.next_event(time.monotonic() + WAIT) == {"config": "reloaded"}
    finally:
        code = watch.stop()
    assert code == 0
    assert "Traceback" not in watch.stderr()


def test_sigterm_ends_the_watch_cleanly(project: Path) -> None:
    watch = WatchProcess(make_project(project))
    assert watch.next_event(time.monotonic() + WAIT)["ready"] is True
    assert watch.stop(signal.SIGTERM) == 0
    assert watch.stderr() == ""


# ---- through the Reloader / registry API -------------------------------------------------------

@dataclass
class Live:
    ws: Workspace
    reloader: Reloader
    tools: asyncio.Queue[dict[str, Any]]
    configs: asyncio.Queue[tuple[config_types.Config | None, ConfigError | None]]
    tracker: Tracker

    async def wait(self, done: Check, what: str) -> None:
        new: list[dict[str, Any]] = []
        async with asyncio.timeout(WAIT):
            while not done(self.tracker, new):
                ev = await self.tools.get()
                self.tracker.apply(ev)
                new.append(ev)


@contextlib.asynccontextmanager
async def live(root: Path) -> AsyncIterator[Live]:
    ws = Workspace(project_config.load(root))
    await ws.registry.refresh()
    tools: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    configs: asyncio.Queue[tuple[config_types.Config | None, ConfigError | None]] = asyncio.Queue()
    reloader = Reloader(ws, on_tools=lambda d: tools.put_nowait(diff_dict(d, ws)),
                        on_config=lambda c, e: configs.put_nowait((c, e)),
                        theme_dirs=lambda: ())
    task = asyncio.create_task(reloader.run())
    try:
        async with asyncio.timeout(WAIT):
            await reloader.ready.wait()
        yield Live(ws, reloader, tools, configs, Tracker(names=set(ws.registry.tools)))
    finally:
        reloader.stop()
        async with asyncio.timeout(WAIT):
            await task


@pytest.mark.slow
async def test_save_patterns_through_the_reloader(project: Path) -> None:
    root = make_project(project)
    async with live(root) as lv:
        for step in STEPS:
            step.act(root)
            await lv.wait(step.done, step.label)
        # The registry agrees with what the diffs said.
        assert set(lv.ws.registry.tools) == lv.tracker.names == {"b", "c", "WEATHER_GET_now"}
        assert lv.ws.registry.broken == []


async def test_refresh_with_changed_paths_handles_dirs_deletes_and_exec_bits(project: Path) -> None:
    """The registry alone: refresh(paths) with a directory, a deleted file, a file that lost
    its exec bit."""
    root = make_project(project)
    ws = Workspace(project_config.load(root))
    await ws.registry.refresh()
    write_tool(root / "extensions" / "w" / "weather_tool.py",
               (REPO / "tests/fixtures/extensions/extensions/plain/weather_tool.py").read_text())
    diff = await ws.registry.refresh([root / "extensions" / "w"])
    assert diff.added == ("WEATHER_GET_now",)
    (fn_dir(root) / "a.sh").chmod(0o644)
    diff = await ws.registry.refresh([fn_dir(root) / "a.sh"])
    assert diff.removed == ("a",) and diff.broken == (str(fn_dir(root) / "a.sh"),)
    assert "not executable" in ws.registry.broken[0].error
    (fn_dir(root) / "a.sh").unlink()
    diff = await ws.registry.refresh([fn_dir(root) / "a.sh"])
    assert ws.registry.broken == [] and "a" not in ws.registry.tools


async def test_a_file_caught_mid_write_is_broken_then_recovers_on_the_next_save(
        project: Path) -> None:
    root = make_project(project)
    path = fn_dir(root) / "m.sh"
    async with live(root) as lv:
        full = tool_text("m")
        write_tool(path, full[: full.index('"description"')])  # cut off mid-line
        await lv.wait(lambda t, new: t.broken_named("m.sh") is not None, "broken")
        assert "--list-functions failed" in (lv.tracker.broken_named("m.sh") or "")
        assert "m" not in lv.ws.registry.tools
        path.write_text(full)  # the rest of the save
        await lv.wait(lambda t, new: mentions(new, "recovered", str(path)) and "m" in t.names,
                      "recovered")
        assert "m" in lv.ws.registry.tools


async def test_a_file_still_open_for_writing_recovers_without_another_save(project: Path) -> None:
    """Running a file open for writing fails ("Text file busy"); nothing else will be written,
    so the reloader declares it once more shortly after."""
    root = make_project(project)
    path = fn_dir(root) / "busy.sh"
    async with live(root) as lv:
        with path.open("w") as f:
            f.write(tool_text("busy"))
            f.flush()
            path.chmod(0o755)
            await lv.wait(lambda t, new: t.broken_named("busy.sh") is not None, "busy")
            assert "busy" in (lv.tracker.broken_named("busy.sh") or "").lower()
        await lv.wait(lambda t, new: "busy" in t.names and t.broken_named("busy.sh") is None,
                      "recovered")


# ---- a call in flight, the next request --------------------------------------------------------

SLOW = """#!/bin/sh
if [ "$1" = --list-functions ]; then
  P='"parameters":{"type":"object","properties":{}}'
  echo '[{"name":"slow","description":"waits for go",'"$P}]"
  exit 0
fi
touch started
i=0
while [ ! -e go ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i+1)); done
echo finished
"""


class Scripted(Provider):
    """Plays one list of stream items per request; remembers the tools each request offered."""

    def __init__(self, *steps: list[StreamItem]) -> None:
        super().__init__(ProviderConfig("scripted", "chat"), "scripted")
        self.steps = list(steps)
        self.offered: list[set[str]] = []

    async def stream(self, messages: list[Message], tools: list[ToolSpec],  # type: ignore[override]
                     system: str | None) -> AsyncIterator[StreamItem]:
        self.offered.append({t.name for t in tools})
        for item in self.steps.pop(0):
            yield item


async def test_delete_while_a_call_runs_finishes_it_and_hides_the_tool_next_time(
        project: Path) -> None:
    root = make_project(project)
    slow = write_tool(fn_dir(root) / "slow", SLOW)
    provider = Scripted([ToolCall("c1", "slow", {}), StreamEnd("tool_use")],
                        [StreamEnd("end_turn")])
    events: list[Event] = []
    async with live(root) as lv:
        runner = lv.ws.runner("hot-reload-test")
        conv = lv.ws.conversation(provider, runner, allow_all, events.append)
        turn = asyncio.create_task(conv.turn("go slow"))
        async with asyncio.timeout(WAIT):
            while not (root / "started").exists():
                await asyncio.sleep(0.02)
        slow.unlink()
        await lv.wait(lambda t, new: mentions(new, "removed", "slow"), "removed")
        (root / "go").touch()
        async with asyncio.timeout(WAIT):
            await turn
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [(f.name, f.status, f.result.strip()) for f in finished] == [("slow", "ok", "finished")]
    assert "slow" in provider.offered[0] and "slow" not in provider.offered[1]


# ---- config ------------------------------------------------------------------------------------

async def test_invalid_config_edit_is_reported_and_the_last_good_config_stays(
        project: Path) -> None:
    root = make_project(project)
    kep_toml = root / "kep.toml"
    async with live(root) as lv:
        before = lv.ws.config
        kep_toml.write_text('[tools]\nbuiltins = false\n[approval]\ndefault = "maybe"\n')
        async with asyncio.timeout(WAIT):
            cfg, error = await lv.configs.get()
        assert cfg is None and isinstance(error, ConfigError)
        assert (error.file, error.key) == (str(kep_toml), "approval.default")
        assert lv.ws.config is before
        kep_toml.write_text("[tools\n")  # not TOML at all
        async with asyncio.timeout(WAIT):
            cfg, error = await lv.configs.get()
        assert error is not None and error.file == str(kep_toml) and "TOML" in error.message
        assert lv.ws.config is before


async def test_approval_rules_apply_from_the_next_call_after_a_kep_toml_edit(
        project: Path) -> None:
    root = make_project(project)
    kep_toml = root / "kep.toml"
    kep_toml.write_text('[tools]\nbuiltins = false\n[approval]\ndefault = "allow"\n')
    provider = Scripted([ToolCall("c1", "a", {}), StreamEnd("tool_use")], [StreamEnd("end_turn")],
                        [ToolCall("c2", "a", {}), StreamEnd("tool_use")], [StreamEnd("end_turn")])
    events: list[Event] = []
    async with live(root) as lv:
        conv = lv.ws.conversation(provider, lv.ws.runner("rules-test"), allow_all, events.append)
        await conv.turn("first")
        kep_toml.write_text('[tools]\nbuiltins = false\n[approval]\ndefault = "allow"\n'
                            '[[approval.rules]]\ntool = "a"\naction = "deny"\n')
        async with asyncio.timeout(WAIT):
            cfg, error = await lv.configs.get()
        assert error is None and cfg is not None
        await conv.turn("second")
    decided = [e.decision for e in events if isinstance(e, ToolCallDecided)]
    statuses = [e.status for e in events if isinstance(e, ToolFinished)]
    assert decided == ["allow", "deny"] and statuses == ["ok", "denied"]


# ---- what the watch ignores, and how it stops --------------------------------------------------

def test_ignored_names() -> None:
    base = Path("/p/prompts/functions")
    for name in (".a.sh.swp", "a.sh.swo", "a.sh~", ".#a.sh", "#a.sh#", "4913", "a.sh.tmp",
                 "__pycache__/x.cpython-311.pyc", ".git/index", "a.py___jb_tmp___"):
        assert ignored(base / name, [base]), name
    for name in ("a.sh", "tool.py", "swap.sh", "notes~ok"):
        assert not ignored(base / name, [base]), name
    # Parts of the watched dir's own path do not count.
    assert not ignored(Path("/home/u/.venv/tools/a.sh"), [Path("/home/u/.venv/tools")])


async def test_swap_files_and_pycache_make_no_batch(project: Path) -> None:
    d = fn_dir(project)
    watcher = Watcher(tool_roots=lambda: [d])
    batches: asyncio.Queue[Batch] = asyncio.Queue()

    async def consume() -> None:
        async for b in watcher.batches():
            batches.put_nowait(b)

    task = asyncio.create_task(consume())
    try:
        async with asyncio.timeout(WAIT):
            assert (await batches.get()).rescan
        (d / ".a.sh.swp").write_text("x")
        (d / "a.sh~").write_text("x")
        (d / "4913").write_text("x")
        (d / "__pycache__").mkdir()
        (d / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"x")
        (d / "real.sh").write_text("x")  # after them: had they counted, they'd be seen first
        async with asyncio.timeout(WAIT):
            batch = await batches.get()
        assert batch.tools == {d.resolve() / "real.sh"}
    finally:
        watcher.stop()
        async with asyncio.timeout(WAIT):
            await task


def _watch_threads() -> list[str]:
    names = [t.name for t in threading.enumerate() if t.name.startswith("kep-watch")]
    for task in os.listdir("/proc/self/task"):  # the notifier's own native threads
        with contextlib.suppress(OSError):
            comm = Path(f"/proc/self/task/{task}/comm").read_text().strip()
            if comm.startswith("notify-rs"):
                names.append(comm)
    return names


async def _no_watch_threads() -> None:
    async with asyncio.timeout(WAIT):
        while _watch_threads():
            await asyncio.sleep(0.02)


@pytest.mark.parametrize("how", ["stop", "cancel"])
async def test_the_watch_stops_cleanly_leaving_no_threads(project: Path, how: str) -> None:
    root = make_project(project)
    ws = Workspace(project_config.load(root))
    reloader = Reloader(ws)
    task = asyncio.create_task(reloader.run())
    async with asyncio.timeout(WAIT):
        await reloader.ready.wait()
    assert any(n.startswith("kep-watch") for n in _watch_threads())
    if how == "stop":
        reloader.stop()
        async with asyncio.timeout(WAIT):
            await task
    else:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert not [t for t in threading.enumerate() if t.name.startswith("kep-watch")]
    await _no_watch_threads()  # the notifier's native thread ends right after
