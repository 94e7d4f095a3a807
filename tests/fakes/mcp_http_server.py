"""An MCP server over HTTP for kep's client tests: streamable HTTP (`--transport http`) or the
legacy HTTP+SSE transport (`--transport sse`), optionally demanding `Authorization: Bearer
TOKEN` (`--token`), answering 401 otherwise. Prints `PORT <n>` once it listens on 127.0.0.1.

Its tools: `echo`; `read_media_file` (an image plus structuredContent that repeats its
base64, no text: the shape of the filesystem server's answer); `embedded` (an embedded text
resource); `task_only` (execution.taskSupport = required).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import socket
import sys
from typing import Any

import mcp.types as types
import uvicorn
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.sse import SseServerTransport
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Mount, Route

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 1200  # ~300 KB
EMBEDDED = "line of the embedded resource\n" * 2000  # ~60 KB of text

TOOLS = [
    types.Tool(name="echo", description="Echo the text back",
               input_schema={"type": "object", "properties": {"text": {"type": "string"}}}),
    types.Tool(name="read_media_file", description="Read an image file",
               input_schema={"type": "object", "properties": {"path": {"type": "string"}}}),
    types.Tool(name="embedded", description="An embedded text resource",
               input_schema={"type": "object"}),
    types.Tool(name="task_only", description="Only runs as a task",
               input_schema={"type": "object"},
               execution=types.ToolExecution(task_support="required")),
]


async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
                    ) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "echo":
        return types.CallToolResult(content=[types.TextContent(type="text",
                                                               text=str(args.get("text")))])
    if params.name == "read_media_file":
        data = base64.b64encode(PNG).decode()
        return types.CallToolResult(
            content=[types.ImageContent(type="image", data=data, mime_type="image/png")],
            structured_content={"content": [{"type": "image", "data": data,
                                             "mimeType": "image/png"}],
                                "path": args.get("path", "pic.png")})
    if params.name == "embedded":
        return types.CallToolResult(content=[
            types.TextContent(type="text", text="see the resource"),
            types.EmbeddedResource(type="resource", resource=types.TextResourceContents(
                uri="file:///notes.txt", mime_type="text/plain", text=EMBEDDED))])
    return types.CallToolResult(content=[types.TextContent(type="text", text="no")],
                                is_error=True)


async def list_resources(ctx: ServerRequestContext[Any], params: Any
                         ) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[
        types.Resource(name="readme", uri="file:///README.md", mime_type="text/markdown"),
        types.Resource(name="schema", uri="db://schema")])


async def list_prompts(ctx: ServerRequestContext[Any], params: Any) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[
        types.Prompt(name="review", description="Review a change", arguments=[
            types.PromptArgument(name="change", description="what changed", required=True)])])


async def get_prompt(ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
                     ) -> types.GetPromptResult:
    args = params.arguments or {}
    if params.name != "review" or "change" not in args:
        raise ValueError("review needs the argument 'change'")
    return types.GetPromptResult(messages=[
        types.PromptMessage(role="user", content=types.TextContent(
            type="text", text="You review changes.")),
        types.PromptMessage(role="assistant", content=types.TextContent(
            type="text", text="Understood.")),
        types.PromptMessage(role="user", content=types.TextContent(
            type="text", text=f"Review this change: {args['change']}"))])


def server() -> Server:
    return Server("http-fake", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_list_prompts=list_prompts,
                  on_get_prompt=get_prompt)


def sse_app(srv: Server) -> Starlette:
    sse = SseServerTransport("/messages/")

    async def handle(request: Any) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as streams:
            await srv.run(streams[0], streams[1], srv.create_initialization_options())
        return Response()

    return Starlette(routes=[Route("/sse", endpoint=handle, methods=["GET"]),
                             Mount("/messages/", app=sse.handle_post_message)])


def require_token(app: Any, token: str) -> Any:
    async def guarded(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    return guarded


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--transport", choices=("http", "sse"), default="http")
    p.add_argument("--token")
    opts = p.parse_args()
    srv = server()
    app: Any = srv.streamable_http_app() if opts.transport == "http" else sse_app(srv)
    if opts.token:
        app = require_token(app, opts.token)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
