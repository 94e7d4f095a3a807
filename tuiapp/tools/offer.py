"""What is offered to the model: `[tools] include` / `exclude`, capped descriptions, and a
warning when the offer is too big to be useful (every request carries all of it).

Patterns are shell-style globs (`git_*`, `mcp_github_*`, `read?ile`), matched case-sensitively
against the whole tool name: tool names are identifiers, and a glob reads as one at a glance.
An empty include list means every tool; exclude wins over include.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from fnmatch import fnmatchcase

from tuiapp.settings.config_types import ToolsConfig
from tuiapp.vocab.tool_specs import ToolSpec

MAX_OFFERED_BYTES = 64 * 1024  # tool definitions sent with every request
NARROW_HINT = (
    "narrow the set with an agent, a prompt's .functions list, or "
    '[tools] include / exclude patterns in kep.toml (e.g. exclude = ["mcp_*"])'
)


def wanted(name: str, tools: ToolsConfig) -> bool:
    if tools.include and not any(fnmatchcase(name, p) for p in tools.include):
        return False
    return not any(fnmatchcase(name, p) for p in tools.exclude)


def capped(spec: ToolSpec, cap: int) -> ToolSpec:
    """The spec with its description cut to `cap` characters, saying so."""
    if len(spec.description) <= cap:
        return spec
    cut = len(spec.description) - cap
    note = f"\n[… description truncated by kep: {cut} more characters …]"
    return dataclasses.replace(spec, description=spec.description[:cap] + note)


def offered(tools: Mapping[str, ToolSpec], settings: ToolsConfig) -> dict[str, ToolSpec]:
    return {
        name: capped(spec, settings.description_cap)
        for name, spec in tools.items()
        if wanted(name, settings)
    }


def too_big(tools: Mapping[str, ToolSpec], settings: ToolsConfig) -> str | None:
    """Why this offer is too big, with how to narrow it; None when it is fine."""
    if len(tools) > settings.max_offered:
        return (
            f"{len(tools)} tools are offered to the model, over [tools] max_offered "
            f"({settings.max_offered}); {NARROW_HINT}"
        )
    size = 0
    for spec in tools.values():
        size += len(spec.name) + len(spec.description)
        size += len(json.dumps(spec.parameters, ensure_ascii=False, default=str))
        if size > MAX_OFFERED_BYTES:
            return (
                f"the tool definitions offered to the model are over "
                f"{MAX_OFFERED_BYTES // 1024} KB and go with every request; {NARROW_HINT}"
            )
    return None
