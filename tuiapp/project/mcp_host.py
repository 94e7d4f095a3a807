"""Who answers what MCP servers ask: sampling goes through the approval flow like a tool
call named `mcp:SERVER:sampling` (so a rule can allow or deny it) and then runs on the
current provider, its cost counted with the conversation's; elicitation goes to the face
(the TUI's form, or declined headless); notices become Notice events.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Awaitable, Callable
from typing import Any

from tuiapp.mcp.peer import (
    ElicitationAnswer,
    ElicitationRequest,
    SamplingAnswer,
    SamplingRequest,
)
from tuiapp.providers.base import Provider, ProviderFailure, stream_with_retries
from tuiapp.security import approval_flow
from tuiapp.security.approval_flow import Approver, Refused
from tuiapp.settings.config_types import ApprovalConfig
from tuiapp.vocab.events import Event, Notice, TextDelta, Usage
from tuiapp.vocab.messages import Message, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

Elicit = Callable[[ElicitationRequest], Awaitable[ElicitationAnswer]]
_ids = itertools.count(1)


def sampling_spec(request: SamplingRequest) -> ToolSpec:
    """What the approval shows: a tool named after the server, its arguments the request."""
    return ToolSpec(
        name=request.rule_name,
        description=f"MCP server {request.server} asks to sample the current model",
        parameters={"type": "object", "properties": {
            "messages": {"type": "array"}, "max_tokens": {"type": "integer"},
            "system_prompt": {"type": "string"}, "model_preferences": {"type": "array"}}},
        format="mcp", source=f"mcp:{request.server}",
        run={"server": request.server, "sampling": True})


class McpHost:
    def __init__(self, *, approval: Callable[[], ApprovalConfig], approver: Approver,
                 provider: Callable[[], Provider | None], emit: Callable[[Event], None],
                 on_usage: Callable[[Usage], None] | None = None,
                 elicit: Elicit | None = None) -> None:
        self._approval, self._approver, self._provider = approval, approver, provider
        self._emit, self._on_usage, self._elicit = emit, on_usage, elicit

    async def sample(self, request: SamplingRequest) -> SamplingAnswer | str:
        spec = sampling_spec(request)
        call = ToolCall(f"mcp-sampling-{next(_ids)}", spec.name, request.arguments())
        outcome = await approval_flow.clear(
            call, spec, approval=self._approval, env=os.environ, approver=self._approver,
            current=lambda name: spec, emit=self._emit)
        if isinstance(outcome, Refused):
            self.notice(f"MCP server {request.server} asked to sample the model: "
                        f"{outcome.result}", "warning")
            return outcome.result
        provider = self._provider()
        if provider is None:
            return "kep has no model to sample with"
        messages = [Message("assistant" if role == "assistant" else "user", text)
                    for role, text in request.messages]
        parts: list[str] = []
        try:
            async for item in stream_with_retries(provider, messages, [],
                                                  request.system or None):
                if isinstance(item, TextDelta):
                    parts.append(item.text)
                elif isinstance(item, Usage) and self._on_usage is not None:
                    self._on_usage(Usage(item.input_tokens, item.output_tokens,
                                         item.cached_tokens, item.reasoning_tokens,
                                         provider.cost(item)))
        except ProviderFailure as e:
            self.notice(f"sampling for MCP server {request.server} failed: {e}", "error")
            return f"sampling failed: {e}"
        return SamplingAnswer("".join(parts), provider.model or provider.config.name)

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        if self._elicit is None:
            self.notice(f"MCP server {request.server} asked for input ({request.mode}); "
                        "declined: no one can answer it here", "warning")
            return ElicitationAnswer("decline")
        return await self._elicit(request)

    def notice(self, text: str, level: str) -> None:
        lv: Any = level if level in ("info", "warning", "error") else "warning"
        self._emit(Notice(text, lv))

    def resource_updated(self, server: str, uri: str) -> None:
        self._emit(Notice(f"MCP server {server}: resource {uri} was updated", "info"))


def for_conversation(conv: Any, approver: Approver, emit: Callable[[Event], None],
                     elicit: Elicit | None = None) -> McpHost:
    """The host for a face with a conversation: its provider (as it is at the time of the
    request), its rules, and its running cost (the footer's figure)."""

    def on_usage(usage: Usage) -> None:
        conv.usage += usage
        emit(conv.usage)

    return McpHost(approval=conv.approval, approver=approver, provider=lambda: conv.provider,
                   emit=emit, on_usage=on_usage, elicit=elicit)
