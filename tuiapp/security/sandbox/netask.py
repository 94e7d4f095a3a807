"""The network question: a sandboxed call reached a host no rule or profile allows.

kep's proxy holds the connection while someone answers (the TUI's approval panel, `kep run`'s
terminal, `--yes`), for at most ASK_SECONDS; no answer is a no. The answer is one of
"once" (this connection), "session" (this tool and host until kep ends), "always" (the same,
and written as a profile entry in kep.toml: `[sandbox.tools.NAME] network = [..., "host:port"]`)
or "deny". An asker may also answer True / False (once / deny). Questions about the same tool,
host and port asked while one is open wait for its answer: one question, not one per
connection a client opens in parallel."""

from __future__ import annotations

import contextlib
import contextvars
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from tuiapp.security.grants import Scope

ASK_SECONDS = 120.0  # a connection waits this long for an answer, then is refused
FORMAT = "network"  # the spec.format of a network question shown in the approval panel
Answer = Literal["once", "session", "always", "deny"]


def normal(answer: Any) -> Answer:
    if answer is True:
        return "once"
    if answer in ("once", "session", "always"):
        return answer  # type: ignore[no-any-return]
    return "deny"


def entry(host: str, port: int | None) -> str:
    """A profile entry for `host` (and `port`): "pypi.org:443", "[::1]:8080", "pypi.org"."""
    shown = f"[{host}]" if ":" in host else host
    return shown if port is None else f"{shown}:{port}"


def scopes(tool: str, host: str, port: int, action: str) -> list[Scope]:
    """What a session or "always" answer to a network question can cover, narrowest first.
    Scope.args carries the profile entry; "always deny" cannot be a profile entry (a profile
    lists what is allowed), so it refuses the host for this session."""
    if action == "deny":
        return [Scope(f"refuse {entry(host, port)} to {tool} for this session (a profile "
                      "lists only allowed hosts)", tool, entry(host, port))]
    return [Scope(f"{entry(host, port)} for {tool}", tool, entry(host, port)),
            Scope(f"{host} on any port for {tool}", tool, entry(host, None))]


def remember(root: Path, project_file: Path, tool: str, host_entry: str) -> None:
    """"always": `host_entry` added to `[sandbox.tools.TOOL] network` in the project's
    kep.toml (comments and layout kept), and accepted by folder trust as the user's own
    answer (a profile entry the project gains otherwise waits for trust)."""
    from tuiapp.security import trust
    from tuiapp.settings import config_writer

    old, new = config_writer.add_sandbox_host(project_file, tool, host_entry)
    trust.accept_setting(root, "sandbox", "tools", old, new)


# The calls' network records (proxy.CallNet) of the tool call being run: a list the runner
# sets around one call, filled as its children are registered with the proxy (a ContextVar
# holding a list: the task that starts the child shares the list, not the variable).
_log: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("kep_net_log",
                                                                       default=None)


@contextlib.contextmanager
def recording() -> Iterator[list[Any]]:
    log: list[Any] = []
    token = _log.set(log)
    try:
        yield log
    finally:
        _log.reset(token)


def note(call_net: Any) -> None:
    log = _log.get()
    if log is not None:
        log.append(call_net)


def summary(log: list[Any]) -> list[str]:
    """What the call reached and was refused, for its tool pane."""
    reached = [w for c in log for w in c.reached]
    refused = [w for c in log for w in c.refused]
    out = []
    for label, items in (("reached", reached), ("refused", refused)):
        if items:
            counted = ", ".join(f"{w} ({n}×)" if n > 1 else w
                                for w, n in Counter(items).most_common(20))
            out.append(f"sandbox: network {label} through kep's proxy: {counted}")
    return out
