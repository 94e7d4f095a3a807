"""Run one tool call as a subprocess: its environment, $LLM_OUTPUT, streaming, timeout, cancel.

Invocation.output_file (llm-functions' $LLM_OUTPUT): an absolute path is used as given; any
other value (e.g. Path("LLM_OUTPUT")) asks for a fresh temp file beside the spool, removed after.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

from tuiapp.security import hidden, secrets
from tuiapp.security.sandbox import netask, wall_report
from tuiapp.security.sandbox import walls as sandbox_walls
from tuiapp.settings.config_types import Config
from tuiapp.tools.call_output import (
    STDERR_KEEP,
    Sink,
    open_private,
    read_capped,
)
from tuiapp.tools.formats.base import ToolFormat
from tuiapp.tools.in_flight import InFlight
from tuiapp.tools.proc import STDERR, STREAM_NAMES, Proc, drain, spawn_error
from tuiapp.vocab.events import ToolStatus
from tuiapp.vocab.tool_specs import ToolSpec


def call_env(
    config: Config, spec: ToolSpec, added: dict[str, str], extra: dict[str, str]
) -> dict[str, str]:
    """The child's environment: kep's own, `added` (the runner's), the format's `extra`, minus
    every secret (provider and `.env` keys) not passed on purpose (secrets.child_env)."""
    env = {**os.environ, **added}
    env["LLM_ROOT_DIR"] = str(config.project_root)
    env["LLM_TOOL_NAME"] = spec.name
    env.setdefault("PYTHONUNBUFFERED", "1")  # Python tools stream line by line too
    env.pop("LLM_TOOL_CACHE_DIR", None)
    env.update(extra)
    # Set, never created here: a tool that wants a cache makes it (as in llm-functions).
    env.setdefault("LLM_TOOL_CACHE_DIR", os.path.join(env["LLM_ROOT_DIR"], "cache", spec.name))
    if config.tools.allow_outside_root:
        env["KEP_ALLOW_OUTSIDE_ROOT"] = "1"
    else:
        env.pop("KEP_ALLOW_OUTSIDE_ROOT", None)
    # kep's file built-ins refuse these whatever else allows (one list: security.hidden).
    env["KEP_HIDDEN_PATHS"] = os.pathsep.join(str(p) for p in hidden.hidden_paths())
    # Last, so a format's `.env` values (llm-functions, Loki) cannot bring a key back.
    return secrets.child_env(config, env, keep=added)


async def run_process(
    fmt: ToolFormat, flight: InFlight, *, config: Config, added_env: dict[str, str]
) -> tuple[ToolStatus, int | None, str]:
    """(status, exit code, text for the model); the output itself goes to the flight's sink.
    A call that failed on a write wall kep can name is offered a wider wall (security/
    sandbox/walls.py): said yes to, it runs once more with that path writable."""
    with netask.recording() as net:
        status, code, text, hit = await _run_once(fmt, flight, config=config,
                                                  added_env=added_env)
    _network_note(flight, net)
    if status != "failed" or not hit or flight.cancelled:
        return status, code, text
    path = hit[0]
    if not await sandbox_walls.ask(flight.spec.name, path):
        return status, code, text
    wider = sandbox_walls.bindable(path)
    flight.sink.add_bytes("stderr", f"sandbox: running again with {wider} writable\n".encode())
    flight.sink.fresh_capture()
    with sandbox_walls.for_this_call((wider,)), netask.recording() as net:
        status, code, text, _ = await _run_once(fmt, flight, config=config,
                                                added_env=added_env)
    _network_note(flight, net)
    return status, code, text


def _network_note(flight: InFlight, net: list[object]) -> None:
    """The hosts the call reached (or was refused) through kep's proxy: in its pane."""
    if lines := netask.summary(net):
        flight.sink.add_bytes("stderr", ("\n".join(lines) + "\n").encode())
        flight.sink.end_input()


async def _run_once(
    fmt: ToolFormat, flight: InFlight, *, config: Config, added_env: dict[str, str]
) -> tuple[ToolStatus, int | None, str, list[Path]]:
    spec, sink, timeout, spool_path = flight.spec, flight.sink, flight.timeout, flight.spool_path
    try:
        inv = fmt.invocation(spec, flight.call.arguments, flight.ctx)
    except Exception as e:
        return "failed", None, f"Error: cannot run {spec.name}: {e}", []
    env = call_env(config, spec, added_env, inv.env)
    out_file: Path | None = None
    own_out_file = False
    if inv.output_file is not None:
        out_file = inv.output_file
        if not out_file.is_absolute():
            out_file, own_out_file = spool_path.with_suffix(".llm_output"), True
        try:
            if own_out_file:  # beside the spool: private like it
                open_private(out_file).close()
            else:
                out_file.parent.mkdir(parents=True, exist_ok=True)
                out_file.write_bytes(b"")
        except OSError as e:
            return (
                "failed",
                None,
                f"Error: cannot create $LLM_OUTPUT file {out_file}: {e.strerror}",
                [],
            )
        env["LLM_OUTPUT"] = str(out_file)
    try:
        try:
            proc = await Proc.spawn(
                inv.argv, cwd=inv.cwd or config.project_root, env=env, stdin=inv.stdin,
                tool=spec.name, call_files=[out_file] if out_file is not None else [],
            )
        except OSError as e:
            return (
                "failed",
                None,
                f"Error: could not start {spec.name}: {spawn_error(Path(inv.argv[0]), e)}",
                [],
            )
        flight.proc = proc
        if flight.cancelled:
            flight.killers.append(asyncio.ensure_future(proc.kill_group()))
        timed_out = False
        try:
            try:
                async with asyncio.timeout(timeout):
                    await _pump(proc, sink)
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
        sink.end_input()
        file_text = read_capped(out_file, config.tools.output_cap) if out_file else None
    finally:
        if own_out_file and out_file is not None:
            with contextlib.suppress(OSError):
                out_file.unlink()
    partial = sink.stdout.text(sink.spool.output_note())
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
            [],
        )
    if flight.cancelled:
        return (
            "cancelled",
            None,
            _with_output(
                f"{spec.name} was cancelled by the user before it finished.",
                partial,
                "Output before it was cancelled",
            ),
            [],
        )
    assert code is not None
    stderr = sink.stderr.value().decode("utf-8", errors="replace").strip()
    walls = wall_report.walls_hit(f"{stderr}\n{partial}" if code else stderr,
                                    cwd=inv.cwd or config.project_root, tool=spec.name)
    if walls:  # which wall it ran into: in the pane, and in what the model gets
        sink.add_bytes("stderr", ("\n".join(walls) + "\n").encode())
        sink.end_input()
    note = ("\n" + "\n".join(walls)) if walls else ""
    if code == 0:
        text = fmt.result_text(spec, partial, file_text).rstrip("\n")
        return "ok", 0, (text if text.strip() else "(no output)") + note, []
    how = f"was killed by signal {-code}" if code < 0 else f"failed with exit code {code}"
    msg = f"Error: {spec.name} {how}.{note}"
    if stderr:
        msg += (
            "\nstderr"
            + (" (last part)" if sink.stderr.total > STDERR_KEEP else "")
            + ":\n"
            + stderr
        )
    hit = wall_report.walls_to_widen(f"{stderr}\n{partial}", cwd=inv.cwd or config.project_root,
                                     tool=spec.name) if walls else []
    return "failed", code, _with_output(msg, partial, "stdout"), hit


async def _pump(proc: Proc, sink: Sink) -> None:
    """Feed the child's output to the sink until EOF, flushing batches on time while idle."""
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


def _with_output(msg: str, output: str, label: str) -> str:
    """The message, then what the tool printed before it ended, when it printed anything."""
    output = output.strip("\n")
    return f"{msg}\n{label}:\n{output}" if output.strip() else msg
