"""A misbehaving MCP stdio server for kep's client tests, built with the mcp SDK's low-level Server.

Start-up behaviour comes from argv: --crash-on-start, --hang-on-start, --stderr-flood BYTES.
Its tools cover every result shape and failure kep must handle: text, structured-only,
images (the filesystem server's `read_media_file` shape, and hostile ones: a lying mime
type, a 20 MB image, 500 images, invalid base64), resources, is_error, progress
notifications, a crash mid-call, a hang, a flood, and a tool that grows the tool list and
sends notifications/tools/list_changed.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import sys
import time
from typing import Any

import mcp.types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.stdio import stdio_server

TOOLS: list[types.Tool] = [
    types.Tool(name="echo", description="Echo the text back",
               input_schema={"type": "object", "properties": {"text": {"type": "string"}},
                             "required": ["text"]}),
    types.Tool(name="Get-Thing", description="A name that needs normalising",
               input_schema={"type": "object", "properties": {}}),
    types.Tool(name="fail", description="Always an error result", input_schema={"type": "object"}),
    types.Tool(name="structured", description="Structured content only",
               input_schema={"type": "object"}),
    types.Tool(name="media", description="An image, an embedded resource and a link",
               input_schema={"type": "object"}),
    types.Tool(name="read_media_file", description="An image plus structuredContent, no text",
               input_schema={"type": "object", "properties": {"path": {"type": "string"}}}),
    types.Tool(name="hostile_media", description="Images that lie, flood or are not base64",
               input_schema={"type": "object", "properties": {"kind": {"type": "string"}}}),
    types.Tool(name="progress", description="Reports progress, then answers",
               input_schema={"type": "object", "properties": {"steps": {"type": "integer"}}}),
    types.Tool(name="crash", description="Exits mid-call", input_schema={"type": "object"}),
    types.Tool(name="hang", description="Never answers", input_schema={"type": "object"}),
    types.Tool(name="flood", description="Answers with `kb` KiB of text",
               input_schema={"type": "object", "properties": {"kb": {"type": "integer"}}}),
    types.Tool(name="grow", description="Adds the tool `extra` and says so",
               input_schema={"type": "object"}),
    types.Tool(name="bad_schema", description="Its schema is not an object schema",
               input_schema={"type": "object", "properties": {"a": {"type": "nonsense"}}}),
]
EXTRA = types.Tool(name="extra", description="Appears after grow", input_schema={"type": "object"})
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 2040  # 2048 bytes
JPEG = b"\xff\xd8\xff\xe0" + b"\1" * 1020  # 1 KiB


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def image(data: bytes | str, mime: str = "image/png") -> types.ImageContent:
    return types.ImageContent(type="image", data=data if isinstance(data, str) else b64(data),
                              mime_type=mime)


def hostile(kind: str) -> list[types.ContentBlock]:
    if kind == "lying":  # a jpeg called png; a text file called png; a gif called text
        return [image(JPEG, "image/png"), image(b"OPENAI_API_KEY=sk-not-an-image\n" * 40),
                image(b"GIF89a" + b"\0" * 100, "text/plain")]
    if kind == "huge":
        return [image(PNG + b"\0" * (20 * 1024 * 1024))]
    if kind == "many":
        return [types.TextContent(type="text", text="500 frames"), *[image(PNG)] * 500]
    if kind == "bad_base64":
        return [image("iVBORw0KGgo!!!not*base64" * 30), image(b64(PNG)[:-3])]
    if kind == "secret":  # a PNG whose text chunk holds the value of FAKE_SECRET_VALUE
        return [image(PNG + os.environ.get("FAKE_SECRET_VALUE", "").encode())]
    return []


def text(value: str, error: bool = False) -> types.CallToolResult:
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=value)]
    return types.CallToolResult(content=content, is_error=error)


async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                     ) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
                    ) -> types.CallToolResult:
    args = params.arguments or {}
    name = params.name
    if name == "echo":
        return text(str(args.get("text", "")))
    if name in ("Get-Thing", "extra"):
        return text(f"{name} ran")
    if name == "fail":
        return text("it failed: no such thing", error=True)
    if name == "structured":
        return types.CallToolResult(content=[], structured_content={"answer": 42, "unit": "m"})
    if name == "media":
        return types.CallToolResult(content=[
            types.TextContent(type="text", text="here you go"),
            types.ImageContent(type="image", data=base64.b64encode(PNG).decode(),
                               mime_type="image/png"),
            types.EmbeddedResource(type="resource", resource=types.TextResourceContents(
                uri="file:///notes.txt", mime_type="text/plain", text="x" * 300)),
            types.ResourceLink(type="resource_link", name="big", uri="file:///big.bin", size=5000),
        ])
    if name == "read_media_file":
        data = b64(PNG)
        return types.CallToolResult(
            content=[image(PNG)],
            structured_content={"content": [{"type": "image", "data": data,
                                             "mimeType": "image/png"}],
                                "path": args.get("path", "pic.png")})
    if name == "hostile_media":
        return types.CallToolResult(content=hostile(str(args.get("kind"))))
    if name == "progress":
        steps = int(args.get("steps", 3))
        for i in range(1, steps + 1):
            await ctx.session.report_progress(i, steps, f"step {i} of {steps}")
            await asyncio.sleep(0.01)
        return text("progress done")
    if name == "crash":
        print("fatal: the fake server crashed on purpose", file=sys.stderr, flush=True)
        os._exit(7)
    if name == "hang":
        await asyncio.sleep(3600)
    if name == "flood":
        return text("y" * (int(args.get("kb", 256)) * 1024))
    if name == "grow":
        if EXTRA not in TOOLS:
            TOOLS.append(EXTRA)
        await ctx.session.send_tool_list_changed()
        return text("grown")
    return text(f"unknown tool {name}", error=True)


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--crash-on-start", action="store_true")
    p.add_argument("--hang-on-start", action="store_true")
    p.add_argument("--stderr-flood", type=int, default=0)
    # Once listed, close stdout, then exit with status 5 a moment later, saying nothing: the
    # end of its output comes before its exit status does.
    p.add_argument("--quiet-exit", type=float, default=0)
    opts = p.parse_args()
    if opts.quiet_exit:
        def later() -> None:
            os.close(1)
            time.sleep(0.5)
            os._exit(5)

        loop = asyncio.get_running_loop()
        loop.call_later(opts.quiet_exit, lambda: loop.run_in_executor(None, later))
    if opts.stderr_flood:
        sys.stderr.write("e" * opts.stderr_flood + "\nflood over\n")
        sys.stderr.flush()
    if opts.crash_on_start:
        print("config error: FAKE_TOKEN is not set", file=sys.stderr, flush=True)
        sys.exit(3)
    if opts.hang_on_start:
        await asyncio.sleep(3600)
    server = Server("fake", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options(
            NotificationOptions(tools_changed=True)))


if __name__ == "__main__":
    asyncio.run(main())
