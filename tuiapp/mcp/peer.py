"""What a server asks of kep: sampling, elicitation, roots; and what it tells: log messages
and resource updates. The SDK's callbacks are built here; each turns the server's request
into a plain request for a `PeerHost` (the project layer decides: approval, the provider,
the UI or headless), so this layer needs neither a provider nor a screen.

The SDK runs each server request in a task of its own, so a request waiting for the user
never holds up the connection. Every string here is the server's and unescaped.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:  # the SDK costs a second to import: only a session with a server needs it
    import mcp.types as types

MAX_SAMPLING_BYTES = 1024 * 1024  # messages + system prompt; a bigger request is refused
SAMPLING_RULE = "mcp:{server}:sampling"  # the tool name rules match to allow a server's sampling
NOTICE_LEVELS = ("warning", "error", "critical", "alert", "emergency")
LOG_LEVELS = ("debug", "info", "notice", *NOTICE_LEVELS)
FORM_TYPES = ("string", "number", "integer", "boolean")
NOTICES_PER_MINUTE = 10


@dataclass(frozen=True)
class SamplingRequest:
    server: str
    messages: tuple[tuple[str, str], ...]  # (role, text); images as a placeholder line
    system: str = ""
    model_hints: tuple[str, ...] = ()
    max_tokens: int = 0
    temperature: float | None = None

    @property
    def rule_name(self) -> str:
        return SAMPLING_RULE.format(server=self.server)

    def arguments(self) -> dict[str, Any]:
        """What the approval shows and rules match, like a tool call's arguments."""
        args: dict[str, Any] = {"messages": [{"role": r, "text": t} for r, t in self.messages],
                                "max_tokens": self.max_tokens}
        if self.system:
            args["system_prompt"] = self.system
        if self.model_hints:
            args["model_preferences"] = list(self.model_hints)
        return args


@dataclass(frozen=True)
class SamplingAnswer:
    text: str
    model: str
    stop_reason: str = "endTurn"


@dataclass(frozen=True)
class ElicitationRequest:
    server: str
    message: str
    mode: Literal["form", "url"] = "form"
    schema: dict[str, Any] = field(default_factory=dict)
    url: str = ""


@dataclass(frozen=True)
class ElicitationAnswer:
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


class PeerHost(Protocol):
    """Who answers a server's requests (the project layer gives one)."""

    async def sample(self, request: SamplingRequest) -> SamplingAnswer | str: ...  # str: refused
    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer: ...
    def notice(self, text: str, level: str) -> None: ...
    def resource_updated(self, server: str, uri: str) -> None: ...


class Refusing:
    """The host until one is given: refuses sampling, declines elicitation, says so."""

    def __init__(self, notice: Callable[[str, str], None] | None = None) -> None:
        self._notice = notice

    async def sample(self, request: SamplingRequest) -> SamplingAnswer | str:
        why = (f"MCP server {request.server} asked to sample the model; denied: no one can "
               "approve it here (run with --yes, or allow it with a rule)")
        self.notice(why, "warning")
        return why

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        self.notice(f"MCP server {request.server} asked for input ({request.mode}); declined: "
                    "no one can answer it here", "warning")
        return ElicitationAnswer("decline")

    def notice(self, text: str, level: str) -> None:
        if self._notice is not None:
            self._notice(text, level)

    def resource_updated(self, server: str, uri: str) -> None:
        self.notice(f"MCP server {server}: resource {uri} changed", "info")


def form_problem(schema: dict[str, Any]) -> str | None:
    """Why kep cannot build a form from `schema` (None: it can). Elicitation forms are flat:
    strings (with enum), numbers, integers, booleans, and arrays of enum strings."""
    props = schema.get("properties")
    if not isinstance(props, dict):
        return "the requested schema has no properties"
    for name, prop in props.items():
        kind = prop.get("type") if isinstance(prop, dict) else None
        if kind in FORM_TYPES:
            continue
        items = prop.get("items") if isinstance(prop, dict) else None
        if kind == "array" and isinstance(items, dict) and (
                "enum" in items or "anyOf" in items) and items.get("type", "string") == "string":
            continue
        return f"field {str(name)[:60]!r} has type {str(kind)[:30]!r}, which a form cannot ask"
    return None


class _Budget:
    """At most NOTICES_PER_MINUTE log notices a minute per server: a server that floods
    errors fills its log file, not the screen."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def take(self) -> str | None:
        now = time.monotonic()
        self.times = [t for t in self.times if now - t < 60]
        if len(self.times) >= NOTICES_PER_MINUTE:
            return None
        self.times.append(now)
        return "last" if len(self.times) == NOTICES_PER_MINUTE else "ok"


def _text(block: Any) -> str:
    if getattr(block, "type", "") == "text":
        return str(block.text)
    return f"[{getattr(block, 'type', 'content')} {getattr(block, 'mime_type', '') or ''}]"


def sampling_request(server: str, p: types.CreateMessageRequestParams) -> SamplingRequest | str:
    """The request, or why it is refused before anyone is asked (too big, tools)."""
    messages = tuple((str(m.role), "\n".join(_text(b) for b in m.content_as_list))
                     for m in p.messages)
    size = sum(len(t) for _, t in messages) + len(p.system_prompt or "")
    if size > MAX_SAMPLING_BYTES:
        return (f"MCP server {server} asked to sample {size / 1048576:.1f} MB of messages; "
                f"refused (the limit is {MAX_SAMPLING_BYTES // 1048576} MB)")
    if p.tools:
        return f"MCP server {server} asked to sample with tools, which kep does not offer; refused"
    hints = tuple(str(h.name) for h in (p.model_preferences.hints or [])
                  if h.name) if p.model_preferences else ()
    return SamplingRequest(server, messages, p.system_prompt or "", hints, p.max_tokens,
                           p.temperature)


def callbacks(server: str, host: Callable[[], PeerHost], root: Callable[[], Path],
              log: Callable[[str], None]) -> dict[str, Any]:
    """The SDK Client's sampling, elicitation, roots and logging callbacks for `server`."""
    import mcp.types as types

    budget = _Budget()

    async def sampling(ctx: Any, p: types.CreateMessageRequestParams) -> Any:
        request = sampling_request(server, p)
        if isinstance(request, str):
            host().notice(request, "warning")
            return types.ErrorData(code=types.INVALID_REQUEST, message=request)
        answer = await host().sample(request)
        if isinstance(answer, str):
            return types.ErrorData(code=types.INVALID_REQUEST, message=answer[:500])
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=answer.text),
            model=answer.model, stop_reason=answer.stop_reason)

    async def elicitation(ctx: Any, p: types.ElicitRequestParams) -> Any:
        if isinstance(p, types.ElicitRequestURLParams):
            request = ElicitationRequest(server, p.message, "url", url=p.url)
        else:
            schema = dict(p.requested_schema)
            problem = form_problem(schema)
            if problem:
                host().notice(f"MCP server {server} asked for input kep cannot show: {problem};"
                              " declined", "warning")
                return types.ElicitResult(action="decline")
            request = ElicitationRequest(server, p.message, "form", schema)
        answer = await host().elicit(request)
        return types.ElicitResult(action=answer.action,
                                  content=answer.content if answer.action == "accept" else None)

    async def roots(ctx: Any) -> types.ListRootsResult:
        # Only the project root: nothing above it is offered.
        where = root().resolve()
        return types.ListRootsResult(roots=[types.Root(uri=where.as_uri(), name=where.name)])

    async def logging(params: types.LoggingMessageNotificationParams) -> None:
        level = str(params.level)
        data = params.data if isinstance(params.data, str) else repr(params.data)
        who = f" ({params.logger})" if params.logger else ""
        log(f"# kep: server log {level}{who}: {data}\n")
        if level in NOTICE_LEVELS and (quota := budget.take()):
            text = f"MCP server {server} {level}{who}: {data[:2000]}"
            if quota == "last":
                text += " (more of its log messages only go to its log file for a while)"
            with contextlib.suppress(Exception):  # a notice must never break the read loop
                host().notice(text, "warning" if level == "warning" else "error")

    return {"sampling_callback": sampling, "elicitation_callback": elicitation,
            "list_roots_callback": roots, "logging_callback": logging}


async def set_log_level(client: Any, server: str, level: str | None, host: PeerHost) -> None:
    """logging/setLevel, when configured and the server has logging; a refusal is a notice."""
    if not level or getattr(client.server_capabilities, "logging", None) is None:
        return
    try:
        with warnings.catch_warnings():  # deprecated in 2026-07-28; servers speak it today
            warnings.simplefilter("ignore")
            await client.set_logging_level(level)
    except Exception as e:
        host.notice(f"MCP server {server} refused log_level {level!r}: {str(e)[:200]}", "warning")
