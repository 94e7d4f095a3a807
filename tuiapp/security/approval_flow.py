"""Clearing one tool call to run: the policy's verdict, the user's answer, and the checks
between that answer and the run. Used for the model's calls and a prompt author's `.cmd`.

- Edited arguments are decided again under the same rules (a deny stands; if they still need
  asking, kep asks about exactly what will run).
- An answer is bound to the tool's code as it was when kep asked: the declaration, and each
  file it runs from (path, size, mtime, ctime, inode and a SHA-256 of the content). If any of
  that changed by the time of the run, kep says so and asks again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import stat
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from tuiapp.security import policy
from tuiapp.settings.config_types import ApprovalConfig
from tuiapp.vocab.events import Event, Notice, ToolCallDecided
from tuiapp.vocab.messages import ToolCall, canonical_json
from tuiapp.vocab.tool_specs import ToolSpec

MAX_ROUNDS = 5  # questions about one call before kep gives up on it (it kept changing)


@dataclass(frozen=True)
class Approval:
    approved: bool
    reason: str = ""
    arguments: dict[str, Any] | None = None  # edited arguments, already validated by the UI
    unattended: bool = False  # no one was there to ask (`kep run` without a TTY): not a "no"


class Approver(Protocol):
    def __call__(
        self, call: ToolCall, spec: ToolSpec, verdict: policy.Verdict
    ) -> Awaitable[Approval]: ...


@dataclass(frozen=True)
class Cleared:
    """Run `call` with `spec` (both as finally approved)."""

    call: ToolCall
    spec: ToolSpec


@dataclass(frozen=True)
class Refused:
    """Not run; `result` goes back to the model."""

    status: str  # "denied" | "failed"
    result: str


async def clear(
    call: ToolCall,
    spec: ToolSpec,
    *,
    approval: Callable[[], ApprovalConfig],
    env: Mapping[str, str],
    approver: Approver,
    current: Callable[[str], ToolSpec | None],
    emit: Callable[[Event], None],
) -> Cleared | Refused:
    """Decide `call`, asking `approver` when the rules say ask. `current` gives the tool as
    the registry knows it now, checked after each answer."""
    again = ""
    original = call.arguments

    def edited() -> dict[str, Any] | None:  # every later event says what will really run
        return call.arguments if call.arguments != original else None

    for _ in range(MAX_ROUNDS):
        verdict = policy.decide(call, approval(), env, spec=spec)
        if verdict.action == "deny":
            emit(ToolCallDecided(call.id, "deny", verdict.rule, edited_arguments=edited()))
            after = f"; {again}" if again else ""
            return Refused("denied", f"denied by policy ({verdict.rule}){after}")
        if verdict.action == "allow":
            emit(ToolCallDecided(call.id, "allow", verdict.rule, edited_arguments=edited()))
            return Cleared(call, spec)
        if again:
            verdict = replace(verdict, again=again)
        sealed = await seal(spec)
        answer = await approver(call, spec, verdict)
        emit(ToolCallDecided(call.id, "ask", verdict.rule, answer.approved, answer.reason,
                             answer.arguments if answer.arguments is not None else edited()))
        if not answer.approved:
            who = "not run, no one was asked" if answer.unattended else "the user denied this call"
            why = f"{who}: {answer.reason}" if answer.reason else who
            return Refused("denied", why)
        if answer.arguments is not None and answer.arguments != call.arguments:
            call = ToolCall(call.id, call.name, answer.arguments,
                            canonical_json(answer.arguments))
            again = "its arguments were edited"
            continue
        now = current(call.name)
        if now is None:
            return Refused("failed", f"Error: {call.name} went away while waiting for "
                                     "approval; nothing was run")
        change = describe_change(sealed, await seal(now))
        if change is None:
            return Cleared(call, now)
        emit(Notice(f"{call.name}: {change} since you were asked; asking again", "warning"))
        spec, again = now, f"{change} since you were asked"
    return Refused("denied", f"{call.name} was not run: it kept changing while kep asked "
                             f"about it ({again})")


# ---- binding an answer to the code ----------------------------------------------------------


@dataclass(frozen=True)
class Seal:
    declaration: str  # the spec, as canonical JSON
    files: tuple[tuple[str, Any], ...]  # (path, fingerprint or why it is unreadable)


async def seal(spec: ToolSpec) -> Seal:
    return await asyncio.to_thread(_seal, spec)


def _seal(spec: ToolSpec) -> Seal:
    declaration = canonical_json({
        "name": spec.name, "description": spec.description, "parameters": spec.parameters,
        "format": spec.format, "source": spec.source, "run": _jsonable(spec.run)})
    paths = [spec.source, *(v for v in spec.run.values() if isinstance(v, str))]
    files = []
    for p in dict.fromkeys(paths):
        if os.path.isabs(p) and os.path.isfile(p):
            files.append((p, _fingerprint(p)))
    return Seal(declaration, tuple(files))


def _fingerprint(path: str) -> Any:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        return f"unreadable: {e.strerror}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file"
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, digest.hexdigest())
    finally:
        os.close(fd)


def describe_change(before: Seal, after: Seal) -> str | None:
    """None when nothing changed, else a short phrase for the user ("its file … changed")."""
    if before == after:
        return None
    old, new = dict(before.files), dict(after.files)
    for path, mark in old.items():
        if path not in new:
            return f"its file {path} is gone"
        if new[path] != mark:
            return f"its file {path} changed"
    if before.declaration != after.declaration:
        return "its declaration changed"
    return "it now runs from other files"


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value
