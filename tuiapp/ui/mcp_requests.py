"""What MCP servers ask of the TUI: sampling goes to the approval panel like a tool call
(`mcp:SERVER:sampling`) and runs on the chat's current model, its cost in the footer;
elicitation opens a form (screens/elicitation.py); notices and resource updates are notices.
The chat is looked up at each request, so a new chat or another model is used at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from tuiapp.mcp.peer import ElicitationAnswer, ElicitationRequest
from tuiapp.mcp.state import ServerState
from tuiapp.project.mcp_host import McpHost
from tuiapp.security.approval_flow import Approval
from tuiapp.security.policy import Verdict
from tuiapp.vocab.events import Event, Usage
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

if TYPE_CHECKING:
    from tuiapp.ui.app_api import KepApp


def start(app: KepApp, sink: Callable[[Event], None],
          on_state: Callable[[ServerState], None]) -> None:
    """Start the MCP servers, with the app as the answer to their requests."""
    app.ws.start_mcp(emit=sink, on_state=on_state)
    if app.ws.mcp is None:
        return

    def emit(event: Event) -> None:
        app.chat.emit(event)

    async def approver(call: ToolCall, spec: ToolSpec, verdict: Verdict) -> Approval:
        return await app.broker(call, spec, verdict)

    def on_usage(usage: Usage) -> None:
        conv = app.chat.conversation
        if conv is None:  # nothing sent yet: the footer shows this request alone
            app.chat.emit(usage)
            return
        conv.usage += usage
        app.chat.emit(conv.usage)

    async def elicit(request: ElicitationRequest) -> ElicitationAnswer:
        from tuiapp.ui.screens.elicitation import ElicitationScreen

        done: asyncio.Future[ElicitationAnswer] = asyncio.get_running_loop().create_future()

        def answered(answer: ElicitationAnswer | None) -> None:
            if not done.done():
                done.set_result(answer or ElicitationAnswer("cancel"))

        app.push_screen(ElicitationScreen(request), callback=answered)
        return await done

    app.ws.mcp.host = McpHost(approval=app.ws.approval, approver=approver,
                              provider=lambda: app.chat.provider, emit=emit,
                              on_usage=on_usage, elicit=elicit)
