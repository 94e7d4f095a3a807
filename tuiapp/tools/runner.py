"""Run one tool call, whatever its format, and tell the story as events.

ToolCallStarted → ToolOutput* → ToolFinished. Output is streamed as it arrives, batched so a
flood stays a few hundred events (a batch every 50 ms or 64 KiB; a partial line waits at most
one extra batch for its newline). ToolOutput.text pieces of one stream concatenate to the
stream; a piece may end mid-line. The full stream goes to <spool_dir>/<call_id>.log (stderr
lines marked "[stderr] "); the model gets at most `[tools] output_cap` bytes with a note
saying what was cut. Memory stays bounded whatever the tool prints.

Formats build an Invocation (a subprocess). A format object that needs no subprocess (MCP)
may instead define `async execute(spec, arguments, ctx, output) -> DirectResult`; the runner
prefers it when present and still handles events, capping, spooling, timeout and cancel.

Invocation.output_file (llm-functions' $LLM_OUTPUT): an absolute path is used as given; any
other value (e.g. Path("LLM_OUTPUT")) asks the runner for a fresh temp file, removed after.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import re
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TextIO, runtime_checkable

from tuiapp.config import Config
from tuiapp.core.events import Event, ToolCallStarted, ToolFinished, ToolOutput, ToolStatus
from tuiapp.core.messages import ToolCall
from tuiapp.tools.formats.base import FormatContext, ToolFormat
from tuiapp.tools.model import ToolSpec
from tuiapp.tools.proc import (
    STDERR,
    STREAM_NAMES,
    Proc,
    TailBuffer,
    drain,
    run_collect,
    spawn_error,
)

Emit = Callable[[Event], None]
Output = Callable[[str, str], None]  # (stream, text)

FLUSH_INTERVAL = 0.05
FLUSH_BYTES = 64 << 10
STDERR_KEEP = 8 << 10  # stderr tail kept for the model
STDERR_MARK = "[stderr] "


@dataclass(frozen=True)
class DirectResult:
    ok: bool
    text: str
    exit_code: int | None = None


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


# ---- output plumbing ---------------------------------------------------------------------


class _Capture:
    """First and last bytes of a stream, at most `cap` in all, plus the total size."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.head = bytearray()
        self.head_cap = cap - cap // 4
        self.tail = TailBuffer(cap // 4)
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail.add(data)

    @property
    def truncated(self) -> bool:
        return self.total > self.cap

    def text(self, note_where: str) -> str:
        if not self.truncated:
            return (bytes(self.head) + self.tail.value()).decode("utf-8", errors="replace")
        omitted = self.total - len(self.head) - len(self.tail.value())
        note = (
            f"\n[… output truncated: {omitted} bytes omitted of {self.total}, over the "
            f"{self.cap}-byte limit{note_where} …]\n"
        )
        return (
            self.head.decode("utf-8", errors="replace")
            + note
            + self.tail.value().decode("utf-8", errors="replace")
        )


class _Batcher:
    """Coalesces output into few events, keeping lines whole when it can."""

    def __init__(self, out: Output) -> None:
        self.out = out
        self.segs: list[list[str]] = []  # [stream, text], in arrival order
        self.size = 0
        self.held: set[str] = set()  # streams whose partial line was held at the last flush
        self.last = time.monotonic()

    def add(self, stream: str, text: str) -> None:
        if not text:
            return
        if self.segs and self.segs[-1][0] == stream:
            self.segs[-1][1] += text
        else:
            self.segs.append([stream, text])
        self.size += len(text)
        if self.size >= FLUSH_BYTES or time.monotonic() - self.last >= FLUSH_INTERVAL:
            self.flush()

    def due_in(self) -> float | None:
        if not self.segs:
            return None
        return max(0.0, self.last + FLUSH_INTERVAL - time.monotonic())

    def flush(self, final: bool = False) -> None:
        segs, self.segs, self.size = self.segs, [], 0
        self.last = time.monotonic()
        keep: list[list[str]] = []
        held: set[str] = set()
        if not final:
            last_of = {seg[0]: i for i, seg in enumerate(segs)}
            for stream, i in last_of.items():
                text = segs[i][1]
                cut = text.rfind("\n") + 1
                tail = text[cut:]
                if tail and stream not in self.held and len(tail) < FLUSH_BYTES:
                    segs[i][1] = text[:cut]
                    keep.append([stream, tail])
                    held.add(stream)
        self.held = held
        for stream, text in segs:
            if text:
                self.out(stream, text)
        self.segs = keep
        self.size = sum(len(t) for _, t in keep)


class _Spool:
    """The whole interleaved stream on disk. A failing disk only loses the spool."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.f: TextIO | None = None
        self.last_stream = ""
        self.at_bol = True
        self.broken = False

    def write(self, stream: str, text: str) -> None:
        if not text or self.broken:
            return
        try:
            if self.f is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.f = self.path.open("w", encoding="utf-8", errors="replace")
            if stream != self.last_stream and not self.at_bol:
                self.f.write("\n")
                self.at_bol = True
            self.last_stream = stream
            if stream == "stderr":
                body = text.replace("\n", "\n" + STDERR_MARK)
                if self.at_bol:
                    body = STDERR_MARK + body
                if text.endswith("\n"):
                    body = body[: -len(STDERR_MARK)]
                text = body
            self.f.write(text)
            self.at_bol = text.endswith("\n")
        except OSError:
            self.broken = True

    def close(self, footer: str) -> None:
        self.write("kep", ("" if self.at_bol else "\n") + footer + "\n")
        if self.f is not None:
            with contextlib.suppress(OSError):
                self.f.close()


class _Sink:
    """Where a call's bytes go: the model's capture, the spool and the events."""

    def __init__(self, cap: int, spool: _Spool, batcher: _Batcher) -> None:
        self.stdout = _Capture(cap)
        self.stderr = TailBuffer(STDERR_KEEP)
        self.spool = spool
        self.batcher = batcher
        self.decoders = {
            name: codecs.getincrementaldecoder("utf-8")(errors="replace")
            for name in ("stdout", "stderr")
        }

    def add_bytes(self, stream: str, data: bytes) -> None:
        (self.stdout if stream == "stdout" else self.stderr).add(data)
        self._text(stream, self.decoders[stream].decode(data))

    def add_text(self, stream: str, text: str) -> None:
        """For direct (in-process) formats, whose output is already text."""
        data = text.encode("utf-8", errors="replace")
        (self.stdout if stream == "stdout" else self.stderr).add(data)
        self._text(stream, text)

    def _text(self, stream: str, text: str) -> None:
        self.spool.write(stream, text)
        self.batcher.add(stream, text)

    def close(self) -> None:
        for stream, dec in self.decoders.items():
            self._text(stream, dec.decode(b"", final=True))
        self.batcher.flush(final=True)


# ---- the runner --------------------------------------------------------------------------


@dataclass
class _Running:
    proc: Proc | None = None
    task: asyncio.Future[Any] | None = None
    cancelled: bool = False
    killers: list[asyncio.Task[None]] = field(default_factory=list)


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
        self.spool_dir = spool_dir
        # Added to every call's environment, as if the user had set it (an agent's
        # LLM_AGENT_VAR_<NAME> values): formats see it too, so their defaults do not win.
        self.env: dict[str, str] = dict(env or {})
        self.formats = {f.name: f for f in formats}
        self._running: dict[str, _Running] = {}

    def reconfigure(self, config: Config) -> None:
        self.config = config

    def running(self) -> list[str]:
        return list(self._running)

    def cancel(self, call_id: str) -> bool:
        """Stop a running call (its whole process group). False if it is not running."""
        state = self._running.get(call_id)
        if state is None or state.cancelled:
            return False
        state.cancelled = True
        if state.proc is not None:
            state.killers.append(asyncio.ensure_future(state.proc.kill_group()))
        if state.task is not None:
            state.task.cancel()
        return True

    async def execute(self, spec: ToolSpec, call: ToolCall, emit: Emit) -> ToolFinished:
        """conversation.Executor: run the call, emit its events, return ToolFinished."""
        return (await self.run(spec, call, emit)).finished

    async def run(self, spec: ToolSpec, call: ToolCall, emit: Emit) -> RunOutcome:
        started = time.monotonic()
        spool_path = self.spool_dir / f"{_safe_name(call.id)}.log"
        emit(ToolCallStarted(call.id, spec.name, str(spool_path)))
        cap = self.config.tools.output_cap
        sink = _Sink(
            cap,
            _Spool(spool_path),
            _Batcher(lambda stream, text: emit(ToolOutput(call.id, stream, text))),  # type: ignore[arg-type]
        )
        state = _Running()
        self._running[call.id] = state
        timeout = self.config.tools.timeout_for(spec.name)
        fmt = self.formats.get(spec.format)
        ctx = FormatContext(
            self.config.project_root, self.config, run_collect, {**os.environ, **self.env}
        )
        try:
            if fmt is None:
                status, code, text = (
                    "failed",
                    None,
                    f"Error: kep cannot run tools of format {spec.format!r}.",
                )
            elif isinstance(fmt, DirectFormat):
                status, code, text = await self._direct(fmt, spec, call, ctx, sink, state, timeout)
            else:
                status, code, text = await self._process(
                    fmt, spec, call, ctx, sink, state, timeout, spool_path
                )
        except asyncio.CancelledError:
            # The turn was interrupted: the group is already killed; say so, then go on unwinding.
            sink.close()
            self._finish(
                emit,
                spec,
                call,
                "cancelled",
                None,
                started,
                sink,
                spool_path,
                f"{spec.name} was interrupted before it finished.",
            )
            raise
        finally:
            self._running.pop(call.id, None)
            for k in state.killers:
                with contextlib.suppress(Exception):
                    await k
        sink.close()
        return self._finish(emit, spec, call, status, code, started, sink, spool_path, text)

    def _finish(
        self,
        emit: Emit,
        spec: ToolSpec,
        call: ToolCall,
        status: ToolStatus,
        code: int | None,
        started: float,
        sink: _Sink,
        spool_path: Path,
        text: str,
    ) -> RunOutcome:
        duration = int((time.monotonic() - started) * 1000)
        cap = self.config.tools.output_cap
        truncated = sink.stdout.truncated
        if len(text.encode("utf-8", errors="replace")) > cap + 1024:  # e.g. a huge $LLM_OUTPUT
            text, truncated = _cap_text(text, cap, spool_path), True
        footer = f"[kep: {status}, exit code {code}, {duration} ms]"
        sink.spool.close(footer)
        spool = str(spool_path) if sink.spool.f is not None else ""
        fin = ToolFinished(call.id, spec.name, status, code, duration, text, truncated, spool)
        emit(fin)
        return RunOutcome(
            fin,
            sink.stdout.text(_where(spool_path)),
            sink.stderr.value().decode("utf-8", errors="replace"),
            truncated,
        )

    def _env(self, spec: ToolSpec, extra: dict[str, str]) -> dict[str, str]:
        env = {**os.environ, **self.env}
        env["LLM_ROOT_DIR"] = str(self.config.project_root)
        env["LLM_TOOL_NAME"] = spec.name
        env.setdefault("PYTHONUNBUFFERED", "1")  # Python tools stream line by line too
        env.pop("LLM_TOOL_CACHE_DIR", None)
        env.update(extra)
        # Set, never created here: a tool that wants a cache makes it (as in llm-functions).
        env.setdefault("LLM_TOOL_CACHE_DIR", os.path.join(env["LLM_ROOT_DIR"], "cache", spec.name))
        if self.config.tools.allow_outside_root:
            env["KEP_ALLOW_OUTSIDE_ROOT"] = "1"
        else:
            env.pop("KEP_ALLOW_OUTSIDE_ROOT", None)
        return env

    async def _process(
        self,
        fmt: ToolFormat,
        spec: ToolSpec,
        call: ToolCall,
        ctx: FormatContext,
        sink: _Sink,
        state: _Running,
        timeout: float,
        spool_path: Path,
    ) -> tuple[ToolStatus, int | None, str]:
        try:
            inv = fmt.invocation(spec, call.arguments, ctx)
        except Exception as e:
            return "failed", None, f"Error: cannot run {spec.name}: {e}"
        env = self._env(spec, inv.env)
        out_file: Path | None = None
        own_out_file = False
        if inv.output_file is not None:
            out_file = inv.output_file
            if not out_file.is_absolute():
                out_file, own_out_file = spool_path.with_suffix(".llm_output"), True
            try:
                out_file.parent.mkdir(parents=True, exist_ok=True)
                out_file.write_bytes(b"")
            except OSError as e:
                return (
                    "failed",
                    None,
                    f"Error: cannot create $LLM_OUTPUT file {out_file}: {e.strerror}",
                )
            env["LLM_OUTPUT"] = str(out_file)
        try:
            try:
                proc = await Proc.spawn(
                    inv.argv, cwd=inv.cwd or self.config.project_root, env=env, stdin=inv.stdin
                )
            except OSError as e:
                return (
                    "failed",
                    None,
                    f"Error: could not start {spec.name}: {spawn_error(Path(inv.argv[0]), e)}",
                )
            state.proc = proc
            if state.cancelled:
                state.killers.append(asyncio.ensure_future(proc.kill_group()))
            timed_out = False
            try:
                try:
                    async with asyncio.timeout(timeout):
                        await self._pump(proc, sink)
                        code: int | None = await proc.wait()
                except TimeoutError:
                    timed_out = True
                    await proc.kill_group()
                    for fd, data in await drain(proc):
                        sink.add_bytes(STREAM_NAMES[fd], data)
                    code = None
            except asyncio.CancelledError:
                proc.signal_group(signal.SIGTERM)
                with contextlib.suppress(Exception):
                    await asyncio.shield(proc.kill_group(grace=0.2))
                raise
            finally:
                proc.close()
            file_text = _read_capped(out_file, self.config.tools.output_cap) if out_file else None
        finally:
            if own_out_file and out_file is not None:
                with contextlib.suppress(OSError):
                    out_file.unlink()
        partial = sink.stdout.text(_where(spool_path))
        elapsed = f"{timeout:g} s"
        if timed_out:
            return (
                "timed_out",
                None,
                _with_output(
                    f"Error: {spec.name} timed out after {elapsed} and was stopped "
                    "(its whole process group was killed).",
                    partial,
                    "Output before the timeout",
                ),
            )
        if state.cancelled:
            return (
                "cancelled",
                None,
                _with_output(
                    f"{spec.name} was cancelled by the user before it finished.",
                    partial,
                    "Output before it was cancelled",
                ),
            )
        assert code is not None
        stderr = sink.stderr.value().decode("utf-8", errors="replace").strip()
        if code == 0:
            text = fmt.result_text(spec, partial, file_text).rstrip("\n")
            return "ok", 0, text if text.strip() else "(no output)"
        how = f"was killed by signal {-code}" if code < 0 else f"failed with exit code {code}"
        msg = f"Error: {spec.name} {how}."
        if stderr:
            msg += (
                "\nstderr"
                + (" (last part)" if sink.stderr.total > STDERR_KEEP else "")
                + ":\n"
                + stderr
            )
        return "failed", code, _with_output(msg, partial, "stdout")

    async def _pump(self, proc: Proc, sink: _Sink) -> None:
        while True:
            delay = sink.batcher.due_in()
            if delay is None:
                item = await proc.read()
            else:
                try:
                    item = await asyncio.wait_for(proc.read(), delay)
                except TimeoutError:
                    sink.batcher.flush()
                    continue
            if item is None:
                return
            fd, data = item
            sink.add_bytes("stderr" if fd == STDERR else "stdout", data)

    async def _direct(
        self,
        fmt: DirectFormat,
        spec: ToolSpec,
        call: ToolCall,
        ctx: FormatContext,
        sink: _Sink,
        state: _Running,
        timeout: float,
    ) -> tuple[ToolStatus, int | None, str]:
        task = asyncio.ensure_future(fmt.execute(spec, call.arguments, ctx, sink.add_text))
        state.task = task
        try:
            async with asyncio.timeout(timeout):
                res = await task
        except TimeoutError:
            return (
                "timed_out",
                None,
                f"Error: {spec.name} timed out after {timeout:g} s and was stopped.",
            )
        except asyncio.CancelledError:
            if state.cancelled and task.cancelled():
                return (
                    "cancelled",
                    None,
                    f"{spec.name} was cancelled by the user before it finished.",
                )
            task.cancel()
            raise
        except Exception as e:
            return "failed", None, f"Error: {spec.name} failed: {type(e).__name__}: {e}"
        if res.ok:
            return (
                "ok",
                res.exit_code if res.exit_code is not None else 0,
                res.text or "(no output)",
            )
        return (
            "failed",
            res.exit_code,
            res.text if res.text.startswith("Error") else f"Error: {res.text}",
        )


def _where(spool_path: Path) -> str:
    return f"; full output: {spool_path}"


def _with_output(msg: str, output: str, label: str) -> str:
    output = output.strip("\n")
    return f"{msg}\n{label}:\n{output}" if output.strip() else msg


def _cap_text(text: str, cap: int, spool_path: Path) -> str:
    data = text.encode("utf-8", errors="replace")
    head, tail = data[: cap - cap // 4], data[-(cap // 4) :] if cap >= 4 else b""
    omitted = len(data) - len(head) - len(tail)
    return (
        head.decode("utf-8", errors="replace")
        + f"\n[… output truncated: {omitted} bytes omitted of {len(data)}{_where(spool_path)} …]\n"
        + tail.decode("utf-8", errors="replace")
    )


def _read_capped(path: Path, cap: int) -> str | None:
    """$LLM_OUTPUT's text, never reading more than a bit over the cap into memory."""
    try:
        with path.open("rb") as f:
            data = f.read(cap + 4096)
            more = f.read(1)
    except OSError:
        return None
    text = data.decode("utf-8", errors="replace")
    if more:
        size = path.stat().st_size
        text += f"\n[… output truncated: the result file is {size} bytes …]"
    return text
