"""A tool call being run: what it is, and what the runner holds so cancel can reach it."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuiapp.tools.call_output import Sink
from tuiapp.tools.formats.base import FormatContext
from tuiapp.tools.proc import Proc
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec


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
    structured: Any = None  # a direct call's structured result (an MCP structuredContent)
    # Group kills started by cancel; the runner awaits them before the call ends.
    killers: list[asyncio.Task[None]] = field(default_factory=list)


class CallGate:
    """At most `limit` calls run at once; the others wait first come, first served.

    The limit is read at every admission, so a config reload applies to calls not yet started.
    A waiting call can be withdrawn (cancel) without ever running.
    """

    def __init__(self, limit: Callable[[], int]) -> None:
        self._limit = limit
        self.running = 0
        self._waiting: OrderedDict[str, asyncio.Future[bool]] = OrderedDict()

    def waiting(self) -> list[str]:
        return list(self._waiting)

    def try_enter(self) -> bool:
        if not self._waiting and self.running < max(1, self._limit()):
            self.running += 1
            return True
        return False

    async def wait_turn(self, call_id: str) -> bool:
        """Queue `call_id`; True once it may run, False if it was withdrawn meanwhile."""
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting[call_id] = fut
        try:
            admitted = await fut
        except asyncio.CancelledError:
            admitted_now = fut.done() and not fut.cancelled() and fut.result()
            if self._waiting.pop(call_id, None) is None and admitted_now:
                self.leave()  # admitted and cancelled in the same tick: pass the slot on
            raise
        return admitted

    def withdraw(self, call_id: str) -> bool:
        fut = self._waiting.pop(call_id, None)
        if fut is None or fut.done():
            return False
        fut.set_result(False)
        return True

    def leave(self) -> None:
        self.running -= 1
        self._admit()

    def _admit(self) -> None:
        while self._waiting and self.running < max(1, self._limit()):
            _, fut = self._waiting.popitem(last=False)
            if not fut.done():
                self.running += 1
                fut.set_result(True)
