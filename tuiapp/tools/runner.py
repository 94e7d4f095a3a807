"""Run one tool call, whatever its format, and tell the story as events.

ToolCallStarted → ToolOutput* → ToolFinished. How output is batched, spooled to
<spool_dir>/<call_id>.log and capped for the model (`[tools] output_cap`) is in call_output;
how a subprocess call runs is in process_call.

Formats build an Invocation (a subprocess). A format object that needs no subprocess (MCP)
may instead define `async execute(spec, arguments, ctx, output) -> DirectResult`; the runner
prefers it when present and still handles events, capping, spooling, timeout and cancel.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from tuiapp.security import secrets
from tuiapp.security.sandbox import spawn as sandbox_spawn
from tuiapp.settings.config_types import Config
from tuiapp.tools.call_output import (
    STDERR_MARK as STDERR_MARK,  # re-exported: the output viewer reads spool files with it
)
from tuiapp.tools.call_output import (
    Batcher,
    Output,
    Sink,
    Spool,
    SpoolBudget,
    cap_text,
)
from tuiapp.tools.formats.base import FormatContext, ToolFormat
from tuiapp.tools.in_flight import CallGate, InFlight
from tuiapp.tools.proc import run_collect
from tuiapp.tools.process_call import run_process
from tuiapp.vocab.events import (
    Event,
    ToolCallQueued,
    ToolCallStarted,
    ToolFinished,
    ToolOutput,
    ToolStatus,
)
from tuiapp.vocab.messages import ToolCall, ToolImage
from tuiapp.vocab.tool_specs import ToolSpec

Emit = Callable[[Event], None]
MB = 1 << 20


@dataclass(frozen=True)
class DirectResult:
    ok: bool
    text: str
    exit_code: int | None = None
    images: tuple[ToolImage, ...] = ()  # their placeholders are in `text`
    structured: Any = None  # an MCP structuredContent, passed on by `kep mcp serve`


@runtime_checkable
class DirectFormat(Protocol):
    async def execute(
        self, spec: ToolSpec, arguments: dict[str, Any], ctx: FormatContext, output: Output
    ) -> DirectResult: ...


@dataclass(frozen=True)
class RunOutcome:
    """A finished call plus what `kep call --json` reports."""

    finished: ToolFinished
    stdout: str  # as kept for the model (capped, with the note when cut)
    stderr: str  # the tail
    truncated: bool


def _safe_name(call_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", call_id)[:100] or "call"


class Runner:
    def __init__(
        self,
        config: Config,
        *,
        spool_dir: Path,
        formats: list[ToolFormat] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        if formats is None:
            from tuiapp.tools.formats import default_formats

            formats = default_formats()
        self.config = config
        sandbox_spawn.use_config(config)
        self.spool_dir = spool_dir
        # Added to every call's environment, as if the user had set it (an agent's
        # LLM_AGENT_VAR_<NAME> values): formats see it too, so their defaults do not win.
        self.env: dict[str, str] = dict(env or {})
        self.formats = {f.name: f for f in formats}
        self._running: dict[str, InFlight] = {}
        self._gate = CallGate(lambda: self.config.tools.max_parallel)
        self._budget: SpoolBudget | None = None

    def _spool_budget(self) -> SpoolBudget:
        """One budget for the session's spool files, counting those a resumed session has."""
        if self._budget is None:
            used = 0
            with contextlib.suppress(OSError):
                used = sum(e.stat().st_size for e in os.scandir(self.spool_dir) if e.is_file())
            self._budget = SpoolBudget(
                lambda: int(self.config.tools.spool_session_mb * MB), used)
        return self._budget

    def reconfigure(self, config: Config) -> None:
        self.config = config
        sandbox_spawn.use_config(config)

    def running(self) -> list[str]:
        return list(self._running)

    def queued(self) -> list[str]:
        return self._gate.waiting()

    def cancel(self, call_id: str) -> bool:
        """Stop a running or queued call (its whole process group). False if it is neither."""
        if self._gate.withdraw(call_id):
            return True
        flight = self._running.get(call_id)
        if flight is None or flight.cancelled:
            return False
        flight.cancelled = True
        if flight.proc is not None:
            flight.killers.append(asyncio.ensure_future(flight.proc.kill_group()))
        if flight.task is not None:
            flight.task.cancel()
        return True

    async def execute(self, spec: ToolSpec, call: ToolCall, emit: Emit) -> ToolFinished:
        """conversation.Executor: run the call, emit its events, return ToolFinished."""
        return (await self.run(spec, call, emit)).finished

    async def run(self, spec: ToolSpec, call: ToolCall, emit: Emit) -> RunOutcome:
        if not self._gate.try_enter():
            emit(ToolCallQueued(call.id, spec.name, len(self._gate.waiting())))
            try:
                admitted = await self._gate.wait_turn(call.id)
            except asyncio.CancelledError:
                emit(self._never_started(spec, call, "was interrupted before it started"))
                raise
            if not admitted:
                fin = self._never_started(spec, call, "was cancelled by the user before it started")
                emit(fin)
                return RunOutcome(fin, "", "", False)
        try:
            return await self._run_admitted(spec, call, emit)
        finally:
            self._gate.leave()

    async def _run_admitted(self, spec: ToolSpec, call: ToolCall, emit: Emit) -> RunOutcome:
        started = time.monotonic()
        spool_path = self.spool_dir / f"{_safe_name(call.id)}.log"
        emit(ToolCallStarted(call.id, spec.name, str(spool_path)))
        cap = self.config.tools.output_cap
        sink = Sink(
            cap,
            Spool(spool_path, int(self.config.tools.spool_max_mb * MB), self._spool_budget()),
            Batcher(lambda stream, text: emit(ToolOutput(call.id, stream, text))),  # type: ignore[arg-type]
            secrets.collect(self.config),
        )
        timeout = self.config.tools.timeout_for(spec.name)
        fmt = self.formats.get(spec.format)
        ctx = FormatContext(
            self.config.project_root,
            self.config,
            run_collect,
            secrets.child_env(self.config, {**os.environ, **self.env}, keep=self.env),
        )
        flight = InFlight(spec, call, ctx, sink, timeout, spool_path)
        self._running[call.id] = flight
        images: tuple[ToolImage, ...] = ()
        try:
            if fmt is None:
                status, code, text = (
                    "failed",
                    None,
                    f"Error: kep cannot run tools of format {spec.format!r}.",
                )
            elif isinstance(fmt, DirectFormat):
                status, code, text, images = await self._direct(fmt, flight)
            else:
                status, code, text = await run_process(
                    fmt, flight, config=self.config, added_env=self.env
                )
        except asyncio.CancelledError:
            # The turn was interrupted: the group is already killed; say so, then go on unwinding.
            sink.close()
            self._finish(
                emit,
                flight,
                "cancelled",
                None,
                started,
                f"{spec.name} was interrupted before it finished.",
            )
            raise
        finally:
            self._running.pop(call.id, None)
            for k in flight.killers:
                with contextlib.suppress(Exception):
                    await k
        sink.close()
        return self._finish(emit, flight, status, code, started, text, images)

    @staticmethod
    def _never_started(spec: ToolSpec, call: ToolCall, why: str) -> ToolFinished:
        return ToolFinished(call.id, spec.name, "cancelled", None, 0, f"{spec.name} {why}.")

    def _finish(
        self,
        emit: Emit,
        flight: InFlight,
        status: ToolStatus,
        code: int | None,
        started: float,
        text: str,
        images: tuple[ToolImage, ...] = (),
    ) -> RunOutcome:
        spec, call, sink, spool_path = flight.spec, flight.call, flight.sink, flight.spool_path
        duration = int((time.monotonic() - started) * 1000)
        cap = self.config.tools.output_cap
        truncated = sink.stdout.truncated
        # The streams are redacted already; this covers $LLM_OUTPUT, MCP results, errors.
        text = sink.secrets.redact(text)
        text, images = _withhold_secret_images(text, images, sink.secrets)
        if len(text.encode("utf-8", errors="replace")) > cap + 1024:  # e.g. a huge $LLM_OUTPUT
            text, truncated = cap_text(text, cap, sink.spool.output_note()), True
        exit_part = f", exit code {code}" if code is not None else ""  # cancelled: no exit
        footer = f"[kep: {status.replace('_', ' ')}{exit_part}, {duration} ms]"
        sink.spool.close(footer)
        spool = str(spool_path) if sink.spool.f is not None else ""
        structured = (None if flight.structured is None
                      else secrets.redact_data(flight.structured, sink.secrets))
        fin = ToolFinished(call.id, spec.name, status, code, duration, text, truncated, spool,
                           images, structured)
        emit(fin)
        return RunOutcome(
            fin,
            sink.stdout.text(sink.spool.output_note()),
            sink.stderr.value().decode("utf-8", errors="replace"),
            truncated,
        )

    async def _direct(
        self, fmt: DirectFormat, flight: InFlight
    ) -> tuple[ToolStatus, int | None, str, tuple[ToolImage, ...]]:
        spec, timeout = flight.spec, flight.timeout
        task = asyncio.ensure_future(
            fmt.execute(spec, flight.call.arguments, flight.ctx, flight.sink.add_text)
        )
        flight.task = task
        try:
            async with asyncio.timeout(timeout):
                res = await task
        except TimeoutError:
            return (
                "timed_out",
                None,
                f"Error: {spec.name} timed out after {timeout:g} s and was stopped.",
                (),
            )
        except asyncio.CancelledError:
            if flight.cancelled and task.cancelled():
                return (
                    "cancelled",
                    None,
                    f"{spec.name} was cancelled by the user before it finished.",
                    (),
                )
            task.cancel()
            raise
        except Exception as e:
            return "failed", None, f"Error: {spec.name} failed: {type(e).__name__}: {e}", ()
        flight.structured = res.structured
        if res.ok:
            return (
                "ok",
                res.exit_code if res.exit_code is not None else 0,
                res.text or "(no output)",
                res.images,
            )
        return (
            "failed",
            res.exit_code,
            res.text if res.text.startswith("Error") else f"Error: {res.text}",
            res.images,
        )


def _withhold_secret_images(text: str, images: tuple[ToolImage, ...], found: secrets.Secrets
                            ) -> tuple[str, tuple[ToolImage, ...]]:
    """Images are never redacted in place (replacing bytes would only corrupt them, and base64
    hides a value at any of three alignments): an image whose decoded bytes hold a secret
    value (a PNG text chunk, say) is not sent, and its placeholder says so."""
    kept = []
    for image in images:
        if found.contains_bytes(base64.b64decode(image.data)):
            text = text.replace(image.placeholder(),
                                image.placeholder("it contains a secret value"), 1)
        else:
            kept.append(image)
    return text, tuple(kept)
