"""A tool call being run: what it is, and what the runner holds so cancel can reach it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuiapp.core.messages import ToolCall
from tuiapp.tools.call_output import Sink
from tuiapp.tools.formats.base import FormatContext
from tuiapp.tools.model import ToolSpec
from tuiapp.tools.proc import Proc


@dataclass
class InFlight:
    spec: ToolSpec
    call: ToolCall
    ctx: FormatContext
    sink: Sink
    timeout: float
    spool_path: Path
    proc: Proc | None = None  # a subprocess call, once spawned
    task: asyncio.Future[Any] | None = None  # a direct (in-process) call
    cancelled: bool = False
    # Group kills started by cancel; the runner awaits them before the call ends.
    killers: list[asyncio.Task[None]] = field(default_factory=list)
