"""Clearing one tool call to run: the policy's verdict, the user's answer, and the checks
between that answer and the run. Used for the model's calls and a prompt author's `.cmd`.

- Edited arguments are decided again under the same rules (a deny stands; if they still need
  asking, kep asks about exactly what will run).
- `before_tool` hooks (tools/hooks.py) are asked after the rules: a hook's deny denies, its ask
  asks about a call the rules allow, its allow answers what the rules would ask; a deny rule
  (and read-only mode's denial) stands whatever a hook says.
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

from tuiapp.security import policy, rule_engine
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


class HookAnswer(Protocol):
    decision: str  # "allow" | "deny" | "ask"
    message: str
    hook: str  # where the hook is written


class HookRunner(Protocol):
    async def before_tool(self, payload: dict[str, Any]) -> HookAnswer | None: ...
    async def fire(self, event: str, payload: dict[str, Any]) -> None: ...


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
    standing: Callable[[str], Approval | None] | None = None,
    hooks: HookRunner | None = None,
) -> Cleared | Refused:
    """Decide `call`, asking `approver` when the rules say ask. `current` gives the tool as
    the registry knows it now, checked after each answer. `standing` gives an answer the user
    already gave for this call before it was reached ("deny every call of this reply"): a
    no there stops it even where a rule would allow it."""
    again = ""
    original = call.arguments

    def edited() -> dict[str, Any] | None:  # every later event says what will really run
        return call.arguments if call.arguments != original else None

    for _ in range(MAX_ROUNDS):
        rules = approval()
        if _quick(call, rules):  # (a thread hop per call would spread a flood of calls out)
            verdict = policy.decide(call, rules, env, spec=spec)
        else:  # off the event loop: big arguments, or a rule RE2 can't run (its helper waits)
            verdict = await asyncio.to_thread(policy.decide, call, rules, env, spec=spec)
        if hooks is not None and verdict.action != "deny":
            verdict = with_hook(verdict, await hooks.before_tool(hook_payload(call, verdict)))
        if verdict.action == "deny":
            emit(ToolCallDecided(call.id, "deny", verdict.rule, edited_arguments=edited(),
                                 message=verdict.message, rule_file=verdict.file,
                                 rule_line=verdict.line))
            after = f"; {again}" if again else ""
            said = f": {verdict.message}" if verdict.message else ""
            return Refused("denied", f"denied by policy{said} ({verdict.rule}){after}")
        early = standing(call.id) if standing is not None and not again else None
        if early is not None and not early.approved:
            emit(ToolCallDecided(call.id, "ask", verdict.rule, False, early.reason))
            return Refused("denied", "the user denied this call" + (
                f": {early.reason}" if early.reason else " (with the rest of the reply)"))
        if verdict.action == "allow":
            emit(ToolCallDecided(call.id, "allow", verdict.rule, edited_arguments=edited(),
                                 rule_file=verdict.file, rule_line=verdict.line))
            return Cleared(call, spec)
        if again:
            verdict = replace(verdict, again=again)
        sealed = await seal(spec)
        if hooks is not None:
            background(hooks.fire("approval_waiting", hook_payload(call, verdict)))
        answer = await approver(call, spec, verdict)
        emit(ToolCallDecided(call.id, "ask", verdict.rule, answer.approved, answer.reason,
                             answer.arguments if answer.arguments is not None else edited(),
                             rule_file=verdict.file, rule_line=verdict.line))
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


QUICK_BYTES = 64 * 1024  # arguments up to this size, in ASCII, are decided on the loop


def _quick(call: ToolCall, approval: ApprovalConfig) -> bool:
    """Whether deciding `call` surely takes no time: small ASCII arguments, and every rule
    runs in RE2 (linear)."""
    if len(call.raw_arguments or "") > QUICK_BYTES:
        return False
    text = canonical_json(call.arguments)
    if len(text) > QUICK_BYTES or not text.isascii() or not call.name.isascii():
        return False
    return all(rule_engine.compiled(p, False) is not None for r in approval.rules
               for p in (r.tool, r.args) if p is not None)


def with_hook(verdict: policy.Verdict, answer: HookAnswer | None) -> policy.Verdict:
    """What a `before_tool` hook's answer makes of the rules' verdict (never of a deny)."""
    if answer is None or verdict.action == "deny" or answer.decision == verdict.action:
        return verdict
    why = answer.hook + (f": {answer.message}" if answer.message else "")
    if answer.decision == "deny":
        return policy.Verdict("deny", why)  # what the model and the user see
    if answer.decision == "ask":
        return replace(verdict, action="ask", rule=f"{why} (the rules said: {verdict.rule})")
    return replace(verdict, action="allow", rule=f"{why} (the rules said: {verdict.rule})",
                   file="", line=0)


def hook_payload(call: ToolCall, verdict: policy.Verdict) -> dict[str, Any]:
    return {"tool": call.name, "call_id": call.id, "arguments": call.arguments,
            "verdict": {"action": verdict.action, "rule": verdict.rule,
                        "file": verdict.file, "line": verdict.line}}


_BACKGROUND: set[asyncio.Task[None]] = set()


def background(work: Awaitable[None]) -> None:
    """A hook that only hears about an event runs beside the turn, never holding it up."""
    task: asyncio.Task[None] = asyncio.ensure_future(work)  # type: ignore[assignment]
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)


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
