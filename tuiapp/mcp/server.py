"""kep as an MCP server: the project's tools, of every format, served over stdio.

Approval rules decide what an MCP client may see and run:
- `deny`: the tool is not listed, and a call to it is refused;
- `ask`: not listed unless --allow-ask, in which case the MCP client's own confirmation
  takes the place of kep's prompt;
- `allow`: listed and run.
The list is decided per tool with empty arguments, because tools/list has none; a rule with an
`args` regex therefore only applies at call time, where every call is decided again with its
real arguments (so an argument-specific deny is enforced even for a listed tool).

Only protocol bytes reach stdout: the SDK's stdio transport points fd 1 at stderr while it
serves, and tools run with their output piped, never inherited.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import IO, Any, Protocol

import mcp.types as types
from mcp.server import Server
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from tuiapp import __version__
from tuiapp.mcp import tool_meta
from tuiapp.mcp.served_resources import ProjectResources
from tuiapp.security import policy, secrets
from tuiapp.security.approval_flow import HookRunner, hook_payload, with_hook
from tuiapp.settings.config_types import ApprovalConfig
from tuiapp.tools.schema import arguments_error
from tuiapp.vocab.events import Event, ToolFinished, ToolOutput
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec


class PromptSource(Protocol):
    """The prompts kep serves (the project's `.prompt` files; built a layer up)."""

    def list(self) -> list[types.Prompt]: ...

    def get(self, name: str, arguments: dict[str, str]) -> types.GetPromptResult: ...


Executor = Callable[[ToolSpec, ToolCall, Callable[[Event], None]], Awaitable[ToolFinished]]
STDERR_TAIL_LINES = 20

INSTRUCTIONS = (
    "kep serves this project's tools (keprompt functions, llm-functions, Loki, extension "
    "packs, AITool classes and bridged MCP servers). Results are the tools' own output."
)


class KepMcpServer:
    def __init__(
        self,
        tools: Callable[[], Mapping[str, ToolSpec]],
        execute: Executor,
        approval: Callable[[], ApprovalConfig],
        *,
        allow_ask: bool = False,
        env: Mapping[str, str] | None = None,
        before_first_list: Callable[[], Awaitable[None]] | None = None,
        hooks: HookRunner | None = None,
        prompts: PromptSource | None = None,
        resources: ProjectResources | None = None,
    ) -> None:
        self._tools, self._execute, self._approval = tools, execute, approval
        self._hooks = hooks  # before_tool hooks answer after the rules, as in a chat
        # The first tools/list waits for this (kep's own MCP servers starting, bounded), so a
        # client that lists once sees the aggregated tools, not just the files'.
        self._before_first_list = before_first_list
        self.allow_ask = allow_ask
        self._env = env or {}
        self._bus = InMemorySubscriptionBus()  # 2026-era clients hear of changes via listen
        self._legacy: ServerSession | None = None  # handshake-era clients: notifications
        self._prompts, self._resources = prompts, resources
        extra: dict[str, Any] = {}
        if prompts is not None:
            extra.update(on_list_prompts=self._list_prompts, on_get_prompt=self._get_prompt)
        if resources is not None:  # only with --resources: otherwise the methods don't exist
            extra.update(on_list_resources=self._list_resources,
                         on_read_resource=self._read_resource)
        self.server: Server[Any] = Server(
            "kep", version=__version__, instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools, on_call_tool=self._call_tool,
            on_subscriptions_listen=ListenHandler(self._bus), **extra,
        )
        self.server.middleware.append(self._remember_session)

    # ---- policy ----------------------------------------------------------------------------

    def visible(self) -> dict[str, ToolSpec]:
        """The tools an MCP client may see, by the argument-free verdict of each."""
        approval = self._approval()
        out = {}
        for name, spec in self._tools().items():
            action = policy.decide(ToolCall("list", name, {}), approval, self._env,
                                   spec=spec).action
            if action == "allow" or (action == "ask" and self.allow_ask):
                out[name] = spec
        return out

    async def _refusal(self, call: ToolCall, spec: ToolSpec) -> str | None:
        # Off the event loop: a rule RE2 can't run waits for its helper process.
        verdict = await asyncio.to_thread(policy.decide, call, self._approval(), self._env,
                                          spec=spec)
        if self._hooks is not None and verdict.action != "deny":
            verdict = with_hook(verdict, await self._hooks.before_tool(
                hook_payload(call, verdict)))
        if verdict.action == "deny":
            return f"denied by kep's policy: {verdict.why()}"
        if verdict.action == "ask" and not self.allow_ask:
            return (f"kep's policy asks before running this call ({verdict.rule}); "
                    "start the server with `kep mcp serve --allow-ask` to let this client's "
                    "own confirmation decide")
        return None

    # ---- handlers ------------------------------------------------------------------------

    async def _list_tools(self, ctx: ServerRequestContext[Any],
                          params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        wait, self._before_first_list = self._before_first_list, None
        if wait is not None:
            try:
                await wait()
            except Exception:  # a timeout or a failed server: list what there is
                pass
        return types.ListToolsResult(tools=[
            tool_meta.served_tool(spec, _object_schema(spec.parameters))
            for spec in self.visible().values()
        ])

    async def _call_tool(self, ctx: ServerRequestContext[Any],
                         params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        call = ToolCall(f"mcp-{uuid.uuid4().hex[:12]}", params.name, arguments)
        spec = self._tools().get(params.name)
        if spec is None:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}")
        refusal = await self._refusal(call, spec)
        if refusal:
            return _error(f"Error: {params.name} was not run: {refusal}.")
        problem = arguments_error(spec.parameters, arguments)
        if problem:
            return _error(f"Error: invalid arguments for {params.name}: {problem}. "
                          "Nothing was run.")
        stderr: list[str] = []
        progress = _ProgressRelay(ctx.session)

        def emit(event: Event) -> None:
            if isinstance(event, ToolOutput):
                if event.stream == "stderr":
                    stderr.append(event.text)
                progress.push(event.text)

        try:
            fin = await self._execute(spec, call, emit)
        finally:
            await progress.close()
        if fin.status == "ok":
            # Images a served tool returned (an MCP server of kep's own) pass on as images.
            content: list[types.ContentBlock] = [types.TextContent(type="text", text=fin.result)]
            content += [types.ImageContent(type="image", data=i.data, mime_type=i.media_type)
                        for i in fin.images]
            # structuredContent passes on as the tool gave it (filtered like the text).
            return types.CallToolResult(content=content, structured_content=fin.structured)
        return _error(_with_stderr_tail(fin.result, "".join(stderr)))

    async def _list_prompts(self, ctx: ServerRequestContext[Any],
                            params: types.PaginatedRequestParams | None
                            ) -> types.ListPromptsResult:
        assert self._prompts is not None
        return types.ListPromptsResult(prompts=await asyncio.to_thread(self._prompts.list))

    async def _get_prompt(self, ctx: ServerRequestContext[Any],
                          params: types.GetPromptRequestParams) -> types.GetPromptResult:
        assert self._prompts is not None
        return await asyncio.to_thread(self._prompts.get, params.name,
                                       dict(params.arguments or {}))

    async def _list_resources(self, ctx: ServerRequestContext[Any],
                              params: types.PaginatedRequestParams | None
                              ) -> types.ListResourcesResult:
        assert self._resources is not None
        return await asyncio.to_thread(self._resources.list, params.cursor if params else None)

    async def _read_resource(self, ctx: ServerRequestContext[Any],
                             params: types.ReadResourceRequestParams
                             ) -> types.ReadResourceResult:
        assert self._resources is not None
        return await asyncio.to_thread(self._resources.read, str(params.uri))

    async def _remember_session(self, ctx: ServerRequestContext[Any],
                                call_next: Any) -> HandlerResult:
        # A handshake-era connection's session can send notifications at any time later.
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self._legacy = ctx.session
        return _filtered(await call_next(ctx))

    # ---- hot reload ------------------------------------------------------------------------

    async def tools_changed(self, *_: object) -> None:
        """Tell connected clients to list again (call it on RegistryChanged or config reload)."""
        await self._bus.publish(ToolsListChanged())
        if self._legacy is not None:
            try:
                await self._legacy.send_tool_list_changed()
            except Exception:  # the client went away; the next connection lists afresh
                self._legacy = None

    # ---- running ---------------------------------------------------------------------------

    def init_options(self) -> InitializationOptions:
        # Handshake-era clients learn here that list_changed notifications will come.
        # (Prompts and resources are read afresh at every list: no list_changed is promised.)
        return self.server.create_initialization_options(NotificationOptions(tools_changed=True))



class FilteredWire:
    """kep's end of the wire to an MCP client: every line written (results, progress, tool
    lists, errors: all of it) passes the secrets filter first, as JSON."""

    def __init__(self, raw: IO[str]) -> None:
        self._raw = raw

    def write(self, text: str) -> int:
        body = text.rstrip("\n")
        return self._raw.write(secrets.redact_json_text(body) + text[len(body):])

    def flush(self) -> None:
        self._raw.flush()

    def close(self) -> None:
        self._raw.close()


class _ProgressRelay:
    """Tool output chunks → progress notifications for a client that asked for progress.

    Sending happens in one background task so a flooding tool is never slowed by the pipe;
    chunks that arrive while a send is under way are merged into the next message.
    """

    MAX_MESSAGE = 2000

    def __init__(self, session: ServerSession) -> None:
        self._session = session
        self._pending: list[str] = []
        self._count = 0
        self._wake = asyncio.Event()
        self._closed = False
        self._task = asyncio.ensure_future(self._pump())

    def push(self, text: str) -> None:
        self._pending.append(text)
        self._wake.set()

    async def _pump(self) -> None:
        while not (self._closed and not self._pending):
            await self._wake.wait()
            self._wake.clear()
            if not self._pending:
                continue
            text = secrets.active().redact("".join(self._pending)[-self.MAX_MESSAGE:])
            self._pending.clear()
            self._count += 1
            try:
                await self._session.report_progress(self._count, None, text.rstrip("\n"))
            except Exception:  # progress is a courtesy; the result still goes back
                return

    async def close(self) -> None:
        self._closed = True
        self._wake.set()
        try:
            await asyncio.wait_for(self._task, 2)
        except (TimeoutError, asyncio.CancelledError):
            self._task.cancel()


def _filtered(result: HandlerResult) -> HandlerResult:
    """Every answer passes the secrets filter (on stdio FilteredWire does it again, on the
    bytes; over HTTP this is the filter)."""
    if result is None:
        return None
    found = secrets.active()
    data = (result.model_dump(by_alias=True, exclude_none=True, mode="json")
            if isinstance(result, BaseModel) else result)
    if not found.contains(json.dumps(data, ensure_ascii=False)):
        return result
    return secrets.redact_data(data, found)


def _object_schema(parameters: Mapping[str, Any]) -> dict[str, Any]:
    schema = dict(parameters)
    schema.setdefault("type", "object")
    return schema


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _with_stderr_tail(result: str, stderr: str) -> str:
    tail = "\n".join(stderr.rstrip("\n").splitlines()[-STDERR_TAIL_LINES:])
    if not tail or tail in result:
        return result
    return f"{result}\nstderr (last lines):\n{tail}"
