"""A tool run the user asked for by hand (`kep call`, the workbench's Run).

The arguments are checked against the schema before anything runs; the policy decides as
for `kep call` (policy.decide_direct: the user typed it, so `ask` becomes allow and `deny`
still stands). Nothing here re-checks a rule of its own.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tuiapp.security import policy
from tuiapp.settings.config_types import ApprovalConfig
from tuiapp.tools.runner import Runner
from tuiapp.tools.schema import arguments_error
from tuiapp.vocab.events import Event, ToolOutput
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec


@dataclass
class DirectRun:
    """One run as the workbench keeps it."""

    tool: str
    arguments: dict[str, Any]
    status: str = "running"  # ok | failed | timed_out | cancelled | denied | invalid
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    result: str = ""  # what the model would get
    duration_ms: float = 0.0
    bytes: int = 0  # stdout + stderr as streamed
    note: str = ""  # why it did not run (denied, invalid arguments)
    started: float = field(default_factory=time.time)

    def summary(self) -> str:
        if self.note:
            return f"{self.status}: {self.note}"
        code = "-" if self.exit_code is None else str(self.exit_code)
        return (f"{self.status} · exit {code} · {self.duration_ms:.0f} ms · "
                f"{self.bytes} bytes")


def prune_spool(spool_dir: os.PathLike[str] | str, keep: int = 50) -> None:
    """Keep the newest `keep` spool files of direct runs (they are not a session's)."""
    try:
        files = sorted(os.scandir(spool_dir), key=lambda e: e.stat().st_mtime, reverse=True)
    except OSError:
        return
    for entry in files[keep:]:
        try:
            os.unlink(entry.path)
        except OSError:
            pass


async def run_direct(runner: Runner, spec: ToolSpec, arguments: dict[str, Any],
                     approval: ApprovalConfig,
                     on_output: Callable[[str, str], None] | None = None) -> DirectRun:
    """Validate, decide, run; `on_output(stream, text)` sees the output as it streams."""
    run = DirectRun(spec.name, dict(arguments))
    problem = arguments_error(spec.parameters, arguments)
    if problem:
        run.status, run.note = "invalid", f"invalid arguments: {problem} (nothing was run)"
        return run
    call = ToolCall("bench-" + os.urandom(4).hex(), spec.name, dict(arguments))
    verdict = policy.decide_direct(call, approval, os.environ, spec=spec)
    if verdict.action == "deny":
        run.status, run.note = "denied", f"denied by {verdict.rule} (nothing was run)"
        return run

    def emit(event: Event) -> None:
        if isinstance(event, ToolOutput):
            run.bytes += len(event.text.encode("utf-8", errors="replace"))
            if on_output is not None:
                on_output(event.stream, event.text)

    outcome = await runner.run(spec, call, emit)
    fin = outcome.finished
    run.status, run.exit_code = fin.status, fin.exit_code
    run.stdout, run.stderr, run.result = outcome.stdout, outcome.stderr, fin.result
    run.duration_ms = float(fin.duration_ms or 0)
    return run
