"""What a tool is, independent of the format it was written in."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMATS = ("keprompt", "llm-functions", "loki", "extension", "aitool", "mcp")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]
    format: str  # one of FORMATS
    source: str  # file path, or "mcp:<server>"
    # Format-private data needed to run the tool (executable path, function name, …).
    run: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    # What an MCP server said of its tool, passed on when kep serves it: its `title`, its
    # `annotations` (hints, as the server spelled them) and its `outputSchema`.
    title: str = field(default="", compare=False)
    annotations: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    output_schema: dict[str, Any] | None = field(default=None, compare=False, hash=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "format": self.format,
            "source": self.source,
            "status": "ok",
        }


@dataclass(frozen=True)
class BrokenTool:
    source: str
    format: str
    error: str  # one line, says what to fix
    name: str = ""  # the tool's name when known (an MCP tool kep cannot run), else ""

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "format": self.format,
            "status": "broken",
            "error": self.error,
        }


@dataclass
class Invocation:
    """How to run one call as a subprocess (every format runs out of kep's process)."""

    argv: list[str]
    stdin: bytes | None = None
    env: dict[str, str] = field(default_factory=dict)  # added to the user's environment
    # llm-functions/Loki: the tool writes its result here ($LLM_OUTPUT)
    output_file: Path | None = None
    cwd: Path | None = None  # default: project root
