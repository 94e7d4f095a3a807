"""Shared helpers for the UI benchmarks (scripts, not collected by pytest)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "OPENAI_BASE_URL",
            "ANTHROPIC_BASE_URL", "LLM_MCP_SKIP_CONFIRM", "LLM_MCP_NEED_CONFIRM")


def isolated_env(home: Path) -> dict[str, str]:
    """os.environ without API keys, with kep's dirs under `home` (also applied to this process).
    The projects a benchmark builds (all under the temp dir) are trusted, as the user would
    have trusted their own: otherwise kep would load none of their tools."""
    # The tests' conftest (imported by tui_helpers) points kep's dirs at a throwaway home when
    # it is first imported: import it first, so the dirs set here are the ones that stay.
    import conftest  # noqa: F401

    for var, sub in (("KEP_CONFIG_DIR", "config"), ("KEP_DATA_DIR", "data"),
                     ("KEP_CACHE_DIR", "cache"), ("KEP_STATE_DIR", "state")):
        os.environ[var] = str(home / sub)
    for var in KEY_VARS:
        os.environ.pop(var, None)
    from tuiapp.security import trust

    trust.trust(Path(tempfile.gettempdir()))
    return dict(os.environ)


def temp_home(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))


def write_tools(functions: Path, count: int) -> None:
    """`count` keprompt tools, one small shell script each (listing is cheap to run once)."""
    functions.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        name = f"tool_{i:03d}"
        spec = [{"name": name, "description": f"Benchmark tool number {i}.",
                 "parameters": {"type": "object",
                                "properties": {"text": {"type": "string"}}}}]
        path = functions / name
        path.write_text(f"#!/bin/sh\nif [ \"$1\" = --list-functions ]; then\n"
                        f"  echo '{json.dumps(spec)}'\n  exit 0\nfi\ncat\n")
        path.chmod(0o755)


def rss_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class RssSampler(threading.Thread):
    """Samples this process's RSS from a thread, so a busy event loop cannot hide a peak."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0.0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.01):
            self.peak = max(self.peak, rss_mb())


def p95(values: list[float]) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def send_key(app: Any, key: str, char: str | None) -> None:
    """Deliver a key the way the terminal driver does (Pilot.press would wait for idle)."""
    from textual import events

    event = events.Key(key, char)
    event.set_sender(app)
    app._driver.send_message(event)


def verdict(ok: bool) -> str:
    return "OK" if ok else "MISSES TARGET"


class KeyTypist:
    """Keypress latency, the way every UI benchmark measures it: a key typed into the prompt
    every `every` seconds (sent as the terminal driver would), latency = key sent → the
    prompt's Changed message handled. Pass `seen` every message of the app's message hook.
    A key not answered within `timeout` counts as `timeout`."""

    def __init__(self, app: Any, every: float = 0.1, timeout: float = 30.0) -> None:
        self.app = app
        self.every = every
        self.timeout = timeout
        self.latencies: list[float] = []
        self._sent: float | None = None
        self._answered = asyncio.Event()

    def seen(self, message: Any) -> None:
        from textual.widgets import TextArea

        from tuiapp.ui.widgets.prompt_input import PromptInput

        if (self._sent is not None and isinstance(message, TextArea.Changed)
                and isinstance(message.text_area, PromptInput)):
            self.latencies.append(time.perf_counter() - self._sent)
            self._sent = None
            self._answered.set()

    async def type_until(self, done: Callable[[], bool],
                         stop: asyncio.Event | None = None) -> list[float]:
        """Type until `done()` is true (checked before each key); `stop`, when set, also cuts
        the wait between two keys short."""
        while not done():
            self._answered.clear()
            self._sent = time.perf_counter()
            send_key(self.app, "x", "x")
            try:
                await asyncio.wait_for(self._answered.wait(), self.timeout)
            except TimeoutError:
                self.latencies.append(self.timeout)
                self._sent = None
            if stop is None:
                await asyncio.sleep(self.every)
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.every)
        return self.latencies


class StallWatch:
    """The event loop's longest stalls while the app runs: a task that wakes every 5 ms
    records how late it woke. A key typed every 100 ms meets a stall only by chance; this
    sees every one of them."""

    TICK = 0.005

    def __init__(self) -> None:
        self.stalls: list[float] = []
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._watch())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _watch(self) -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(self.TICK)
            self.stalls.append(time.perf_counter() - before - self.TICK)

    @property
    def worst(self) -> float:
        return max(self.stalls, default=0.0)
