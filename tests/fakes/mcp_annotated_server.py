"""A stdio MCP server whose tools carry every piece of metadata a tool may have: a title,
annotations, an outputSchema, and results with structuredContent. kep serving it (as a
bridge) must pass all of it on unchanged."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import mcp.types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server

WEATHER_OUT = {"type": "object", "properties": {"celsius": {"type": "number"},
                                                "sky": {"type": "string"}},
               "required": ["celsius", "sky"]}
TOOLS = [
    types.Tool(name="weather", title="Current weather", description="The weather in a city",
               input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
               output_schema=WEATHER_OUT,
               annotations=types.ToolAnnotations(title="Weather (annotated)", read_only_hint=True,
                                                 destructive_hint=False, idempotent_hint=True,
                                                 open_world_hint=True)),
    types.Tool(name="drop_table", title="Drop a table", description="Deletes a table",
               input_schema={"type": "object"},
               annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True,
                                                 idempotent_hint=False, open_world_hint=False)),
]


async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
                    ) -> types.CallToolResult:
    if params.name == "weather":
        data = {"celsius": 21.5, "sky": "clear"}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text='{"celsius": 21.5, "sky": "clear"}')],
            structured_content=data)
    return types.CallToolResult(content=[types.TextContent(type="text", text="dropped")])


async def main() -> None:
    srv: Server[Any] = Server("annotated", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await srv.run(read, write, srv.create_initialization_options())


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
