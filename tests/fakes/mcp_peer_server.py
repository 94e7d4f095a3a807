"""An MCP stdio server that uses the client side of the protocol: resources and templates,
subscriptions, list_changed notifications, sampling, elicitation, roots and log messages.

Flags: --hostile puts markup, ESC and BEL in every string field it sends; --many lists 500
resources; --set-level-log writes the level kep asked for (logging/setLevel) to stderr.
Tools (each asks kep something and answers with what came back, as JSON text):
  sample {"mb": N}        sampling/createMessage (N MB of message text when given)
  elicit_form {"kind": k} a form elicitation ("ok": every supported type; "unsupported":
                          a nested object and an array of objects)
  elicit_url {}           a URL-mode elicitation
  roots {}                roots/list
  log_all {}              one notifications/message at each of the eight levels
  changed {"n": N}        N resources/list_changed and N prompts/list_changed notifications
  touch {"uri": u}        notifications/resources/updated for u
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

import mcp.types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.stdio import stdio_server

# Markup, an ESC sequence, a BEL and a link: what a hostile server puts in every field.
HOSTILE = "[bold red]boom[/] \x1b[31mred\x1b[0m\x07 [link=https://evil.example]x[/link]"
OPTS = argparse.Namespace(hostile=False, many=False)
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
ADDED: list[str] = []  # resources added by `changed`


def h(text: str) -> str:
    """`text`, made hostile under --hostile."""
    return f"{text} {HOSTILE}" if OPTS.hostile else text


def resources() -> list[types.Resource]:
    count = 500 if OPTS.many else 2
    out = [types.Resource(uri=f"memo://note/{i}", name=h(f"note-{i}"),
                          description=h(f"note number {i}"), mime_type="text/plain")
           for i in range(count)]
    out.append(types.Resource(uri="memo://big", name=h("big"), description=h("2 MB of text"),
                              mime_type="text/plain"))
    out += [types.Resource(uri=u, name=u.rsplit("/", 1)[-1]) for u in ADDED]
    return out


TOOLS = [types.Tool(name=n, description=n, input_schema={"type": "object"})
         for n in ("sample", "elicit_form", "elicit_url", "roots", "log_all", "changed", "touch")]


def form_schema(kind: str) -> dict[str, Any]:
    if kind == "unsupported":
        return {"type": "object", "properties": {
            "nested": {"type": "object", "properties": {"a": {"type": "string"}}},
            "rows": {"type": "array", "items": {"type": "object"}}}}
    return {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "title": h("Name"), "description": h("your name")},
        "age": {"type": "integer", "title": h("Age"), "minimum": 0},
        "ok": {"type": "boolean", "title": h("Agree"), "default": False},
        "colour": {"type": "string", "title": h("Colour"),
                   "enum": [h("red"), h("green")], "enumNames": [h("Red"), h("Green")]},
    }}


def text(value: Any) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(value))])


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
                    ) -> types.CallToolResult:
    args = params.arguments or {}
    s = ctx.session
    if params.name == "sample":
        body = "x" * int(float(args.get("mb", 0)) * 1024 * 1024) or h("Say hello")
        r = await s.create_message(
            [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=body))],
            max_tokens=77, system_prompt=h("be brief"),
            model_preferences=types.ModelPreferences(hints=[types.ModelHint(name=h("sonnet"))]))
        return text(r.model_dump(mode="json", by_alias=True, exclude_none=True))
    if params.name == "elicit_form":
        e = await s.elicit_form(h("Tell me about you"), form_schema(str(args.get("kind", "ok"))))
        return text(e.model_dump(mode="json", by_alias=True, exclude_none=True))
    if params.name == "elicit_url":
        e = await s.elicit_url(h("Sign in"), "https://example.com/login?x=1", "el-1")
        return text(e.model_dump(mode="json", by_alias=True, exclude_none=True))
    if params.name == "roots":
        r = await s.list_roots()
        return text([str(x.uri) for x in r.roots])
    if params.name == "log_all":
        for level in LEVELS:
            await s.send_log_message(level, h(f"log at {level}"), logger=h("fake"))  # type: ignore[arg-type]
        return text("logged")
    if params.name == "changed":
        n = int(args.get("n", 1))
        ADDED.append(f"memo://added/{len(ADDED)}")
        for _ in range(n):
            await s.send_resource_list_changed()
            await s.send_prompt_list_changed()
        return text(n)
    if params.name == "touch":
        await s.send_resource_updated(str(args.get("uri", "memo://note/0")))
        return text("touched")
    return types.CallToolResult(content=[], is_error=True)


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=resources())


async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
        uri_template="memo://user/{user}/note/{id}", name=h("user-note"),
        description=h("a note of a user"), mime_type="text/plain")])


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams
                        ) -> types.ReadResourceResult:
    uri = str(params.uri)
    body = "b" * (2 * 1024 * 1024) if uri == "memo://big" else h(f"contents of {uri}")
    return types.ReadResourceResult(contents=[
        types.TextResourceContents(uri=uri, mime_type="text/plain", text=body)])


async def subscribe(ctx: Any, params: Any) -> types.EmptyResult:
    print(f"subscribed {params.uri}", file=sys.stderr, flush=True)
    return types.EmptyResult()


async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[types.Prompt(name=h("review"), description=h("r"))])


async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
    print(f"log level set to {params.level}", file=sys.stderr, flush=True)
    return types.EmptyResult()


async def roots_changed(ctx: Any, params: Any) -> None:
    print("roots changed", file=sys.stderr, flush=True)


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--hostile", action="store_true")
    p.add_argument("--many", action="store_true")
    p.parse_args(namespace=OPTS)
    server = Server("peer", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool,
                    on_list_resources=list_resources, on_list_resource_templates=list_templates,
                    on_read_resource=read_resource, on_subscribe_resource=subscribe,
                    on_list_prompts=list_prompts, on_set_logging_level=set_level,
                    on_roots_list_changed=roots_changed)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options(NotificationOptions(
            tools_changed=True, resources_changed=True, prompts_changed=True)))


if __name__ == "__main__":
    asyncio.run(main())
