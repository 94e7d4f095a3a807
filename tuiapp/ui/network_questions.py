"""The sandbox's questions in the TUI. A wall a failed call hit (walls.py: a write outside
the project): y runs it again with that path writable, s / a widen it for the session or
always (`[sandbox.tools.NAME] writable` in kep.toml), n leaves the failure as it is.

The network question: a sandboxed call reached a host no rule or profile
allows, and kep's proxy holds the connection while the approval panel asks (security/sandbox/
netask.py). The question queues in the panel like a call: y this connection, n refuse, s for
the session, a always (a profile entry in kep.toml), d refuse for the session; then a digit
for what it covers (this host and port, or the host on any port). No answer within
netask.ASK_SECONDS refuses it; the app never waits on it (the proxy awaits a Future).
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuiapp.conversation.conversation import Approval
from tuiapp.security.grants import Scope
from tuiapp.security.policy import Verdict
from tuiapp.security.sandbox import netask, spawn, walls
from tuiapp.settings.config_types import ConfigError
from tuiapp.ui.literal import say
from tuiapp.ui.messages import ApprovalRequested, PendingApproval
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

if TYPE_CHECKING:
    from textual.app import App

PREFIX = "sandbox-net:"  # the id of a network question's pseudo call
WALL_PREFIX = "sandbox-wall:"  # and of a wall question's
_ids = itertools.count(1)


def is_question(call: ToolCall) -> bool:
    return call.id.startswith((PREFIX, WALL_PREFIX))


def wall_question(tool: str, path: Path, future: asyncio.Future[Approval]) -> PendingApproval:
    wider = walls.bindable(path)
    call = ToolCall(f"{WALL_PREFIX}{next(_ids)}", tool, {"writable": str(wider)})
    spec = ToolSpec(tool, "", {}, walls.FORMAT, "sandbox walls")
    why = (f"sandbox: {tool} failed writing {path}, outside the project; y runs it again "
           f"with {wider} writable (s / a: for the session / always)")
    return PendingApproval(call, spec, Verdict("ask", why), future)


def question(tool: str, host: str, port: int,
             future: asyncio.Future[Approval]) -> PendingApproval:
    where = netask.entry(host, port)
    call = ToolCall(f"{PREFIX}{next(_ids)}", tool, {"reach": where})
    spec = ToolSpec(tool, "", {}, netask.FORMAT, "sandbox network (kep's proxy)")
    why = (f"sandbox: {tool} is connecting to {where}, which no rule or [sandbox] profile "
           f"allows (the connection waits; no answer in {netask.ASK_SECONDS:g} s refuses it)")
    return PendingApproval(call, spec, Verdict("ask", why), future)


def install(app: App[Any]) -> None:
    """Make `app`'s approval panel the one that answers network questions."""

    async def ask(tool: str, host: str, port: int) -> bool | str:
        if not app.is_running:
            return False  # an app that has ended (a test's, or a closed one) answers nothing
        future: asyncio.Future[Approval] = asyncio.get_running_loop().create_future()
        app.post_message(ApprovalRequested(question(tool, host, port, future)))
        try:
            answer = await future
        finally:
            if not future.done():  # timed out (the proxy gave up): off the panel
                future.cancel()
        # s / a / d were kept by grant() before the answer; y answers this connection
        return "once" if answer.approved else "deny"

    spawn.set_network_asker(ask)

    async def ask_wall(tool: str, path: Path) -> bool | str:
        if not app.is_running:
            return False
        future: asyncio.Future[Approval] = asyncio.get_running_loop().create_future()
        app.post_message(ApprovalRequested(wall_question(tool, path, future)))
        return "once" if (await future).approved else "deny"

    walls.set_asker(ask_wall)


def choices(call: ToolCall, action: str) -> list[Scope]:
    """What `s` / `a` / `d` can cover for a network or wall question."""
    if call.id.startswith(WALL_PREFIX):
        return [] if action == "always_deny" else walls.scopes(
            call.name, Path(str(call.arguments.get("writable", "/"))))
    host, _, port = str(call.arguments.get("reach", "")).rpartition(":")
    return netask.scopes(call.name, host.strip("[]"), int(port or 0),
                         "deny" if action == "always_deny" else "allow")


def grant(app: Any, call: ToolCall, scope: Scope, action: str, where: str) -> None:
    """s / a / d and a digit on a network question: kept by the proxy for the session, and
    for "always" written as a profile entry in the project's kep.toml."""
    entry = scope.args or ""
    if call.id.startswith(WALL_PREFIX):
        return wall_grant(app, call, scope, where)
    spawn.network_grant(call.name, entry, allow=action == "allow")
    if where != "always" or action != "allow":
        app.notify(say("For this session: {}", scope.label), title="Sandbox network",
                   timeout=6)
        return
    from tuiapp.security import trust

    file = app.ws.config.project_file
    if not trust.state_of(app.ws.config).trusted:
        app.notify(say("Not saved: the project is not trusted, so its kep.toml is not "
                       "applied. {} is allowed for this session only.", scope.label),
                   title="Sandbox network", severity="warning", timeout=10)
        return
    try:
        netask.remember(app.ws.root, file, call.name, entry)
        from tuiapp.project import config as project_config

        app.ws.reconfigure(project_config.load(app.ws.root))
    except (OSError, ConfigError) as e:  # one clear line; the session grant stands
        app.notify(say("Could not save the profile entry: {}", e), severity="error",
                   timeout=10)
        return
    app.notify(say("{}: always allowed ([sandbox.tools.{}] network in {})", scope.label,
                   call.name, file), title="Sandbox network", timeout=8)


def wall_grant(app: Any, call: ToolCall, scope: Scope, where: str) -> None:
    """s / a and a digit on a wall question: the path writable for the tool's calls this
    session, and for "always" a `[sandbox.tools.NAME] writable` entry in kep.toml."""
    path = scope.args or ""
    walls.allow_for_session(call.name, Path(path))
    if where != "always":
        app.notify(say("For this session: {}", scope.label), title="Sandbox walls", timeout=6)
        return
    from tuiapp.security import trust

    if not trust.state_of(app.ws.config).trusted:
        app.notify(say("Not saved: the project is not trusted, so its kep.toml is not "
                       "applied. {} holds for this session only.", scope.label),
                   title="Sandbox walls", severity="warning", timeout=10)
        return
    try:
        walls.remember(app.ws.root, app.ws.config.project_file, call.name, path)
        from tuiapp.project import config as project_config

        app.ws.reconfigure(project_config.load(app.ws.root))
    except (OSError, ConfigError) as e:
        app.notify(say("Could not save the profile entry: {}", e), severity="error",
                   timeout=10)
        return
    app.notify(say("{}: always ([sandbox.tools.{}] writable in {})", scope.label, call.name,
                   app.ws.config.project_file), title="Sandbox walls", timeout=8)
