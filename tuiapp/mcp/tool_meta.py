"""A tool's metadata across kep's MCP edges: what an MCP server says of its tools (title,
annotations, outputSchema) kept on the ToolSpec, and the annotations `kep mcp serve` declares
for every tool it serves.

Bridged MCP tools pass their server's annotations on as they came. kep's own built-ins
declare what they do (readfile reads, writefile overwrites, execcmd runs anything, wwwget
reads the web). Any other tool (a project's function of any format) is declared with the
protocol's cautious defaults made explicit: not read-only, possibly destructive, open world;
kep cannot know better, and a client must never be told a tool is harmless on a guess.
"""

from __future__ import annotations

from typing import Any

import mcp.types as types

from tuiapp.security import policy
from tuiapp.vocab.tool_specs import ToolSpec

_CAUTIOUS = {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True}


def spec_of(server: str, name: str, tool: types.Tool, source: str) -> ToolSpec:
    """The ToolSpec of one tool an MCP server lists (kep as a client)."""
    annotations = (tool.annotations.model_dump(by_alias=True, exclude_none=True, mode="json")
                   if tool.annotations is not None else {})
    return ToolSpec(
        name=name, description=tool.description or tool.title or tool.name,
        parameters=dict(tool.input_schema), format="mcp", source=source,
        # read-only mode lets a call to a tool its server marks read-only ask, not deny
        run={"server": server, "tool": tool.name,
             "read_only_hint": annotations.get("readOnlyHint") is True},
        title=tool.title or "", annotations=annotations,
        output_schema=dict(tool.output_schema) if tool.output_schema is not None else None)


def served_annotations(spec: ToolSpec) -> types.ToolAnnotations:
    """The annotations kep declares for `spec` when it serves it."""
    if spec.format == "mcp":
        if not spec.annotations:  # the server said nothing: the client keeps its defaults
            return types.ToolAnnotations.model_validate(_CAUTIOUS)
        return types.ToolAnnotations.model_validate(spec.annotations)
    hints: dict[str, Any] = dict(_CAUTIOUS)
    if policy.is_read_only_builtin(spec):
        hints = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True,
                 "openWorldHint": False}
    elif policy.is_builtin_in(spec, policy.WRITING_BUILTINS):
        hints = {"readOnlyHint": False, "destructiveHint": True,
                 "idempotentHint": spec.name != "editfile",  # (a second edit finds no text)
                 "openWorldHint": False}
    elif policy.is_builtin_in(spec, policy.OPEN_WORLD_BUILTINS):
        shell = spec.name == "execcmd"
        hints = {"readOnlyHint": not shell, "destructiveHint": shell, "openWorldHint": True}
    return types.ToolAnnotations.model_validate(hints)


def served_tool(spec: ToolSpec, schema: dict[str, Any]) -> types.Tool:
    """`spec` as kep lists it to an MCP client."""
    return types.Tool(name=spec.name, description=spec.description, input_schema=schema,
                      title=spec.title or None, output_schema=spec.output_schema,
                      annotations=served_annotations(spec))
