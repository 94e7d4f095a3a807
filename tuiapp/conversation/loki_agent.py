"""Loki agents: `agents/NAME/config.yaml` (and `graph.yaml`) → the same Agent llm-functions
agents load into.

What kep honours of a config.yaml: name, description, version, instructions,
dynamic_instructions (the agent's `_instructions` function), variables, conversation_starters,
documents, global_tools (tools of the functions dir, by file name or by a `mapping_tools`
alias of the config dir's config.yaml) and mcp_servers (only those servers' tools are
offered). Every other key that is set is named in a notice, never dropped silently. A
graph.yaml (Loki's multi-step graphs) is not run by kep: an agent with only a graph fails to
start saying so; one with a config.yaml too starts from it, with a notice.
No textual here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tuiapp.conversation.agent_model import Agent, AgentError
from tuiapp.conversation.agent_yaml import AgentYaml

HONOURED = {"name", "description", "version", "instructions", "dynamic_instructions",
            "variables", "conversation_starters", "documents", "global_tools", "mcp_servers"}
GRAPH_NOTICE = ("graph.yaml is a Loki graph (multi-step) agent; kep does not run graphs")


def is_loki_agent_dir(d: Path) -> bool:
    return ((d / "config.yaml").is_file() or (d / "graph.yaml").is_file()) \
        and not (d / "index.yaml").is_file()


def load(agent_dir: Path) -> Agent:

    config = agent_dir / "config.yaml"
    if not config.is_file():
        raise AgentError(f"agent {agent_dir.name}: {agent_dir / 'graph.yaml'}: {GRAPH_NOTICE}, "
                         "and there is no config.yaml to start it from")
    parsed = AgentYaml(config)
    notices = _notices(agent_dir, parsed.data)
    tools = _global_tools(agent_dir, parsed.strings("global_tools"), notices)
    return Agent(**parsed.common_fields(agent_dir), shared_tools=tools, kind="loki",
                 mcp_servers=parsed.strings("mcp_servers"), notices=notices)


def _global_tools(agent_dir: Path, entries: list[str], notices: list[str]) -> list[str]:
    """Tool names from `global_tools`: tool file names (`fs_cat.sh`), or a `mapping_tools`
    alias of the config dir's config.yaml (`fs`), which stands for the visible tools it
    names. An alias's tool that is not visible, or an entry that is neither, is named."""
    from tuiapp.tools.formats import loki_tool_choice
    from tuiapp.tools.formats.loki import tool_name, tools_dir, visible_tools

    config_dir = agent_dir.parent.parent
    table = loki_tool_choice.aliases(config_dir)
    tools_path = tools_dir(config_dir)
    visible = visible_tools(tools_path)
    try:
        files = [p for p in tools_path.iterdir() if p.suffix in (".sh", ".py", ".ts")]
    except OSError:
        files = []
    known = {tool_name(p) for p in files if visible is None or p.name in visible}
    out: list[str] = []
    for entry in entries:
        stem = entry.rsplit("/", 1)[-1]
        if stem in table:
            names = table[stem]
            missing = [n for n in names if n not in known]
            if missing:
                notices.append(f"agent {agent_dir.name}: global_tools alias {stem!r} "
                               f"(mapping_tools) names {', '.join(missing)}, not a visible "
                               "tool of the functions dir; left out, as Loki does")
            out += [n for n in names if n in known]
            continue
        if not stem.endswith((".sh", ".py", ".ts")):
            notices.append(f"agent {agent_dir.name}: global_tools entry {entry!r} is neither a "
                           "tool file name nor a mapping_tools alias; a tool of that name is "
                           "used if there is one")
        out.append(_tool_name(stem))
    return out


def _notices(agent_dir: Path, data: dict[str, Any]) -> list[str]:
    out = []
    if (agent_dir / "graph.yaml").is_file():
        out.append(f"agent {agent_dir.name}: {GRAPH_NOTICE}; started from config.yaml instead")
    ignored = sorted(k for k, v in data.items()
                     if k not in HONOURED and v not in (None, False, "", [], {}))
    if ignored:
        out.append(f"agent {agent_dir.name}: config.yaml settings kep does not honour, ignored: "
                   + ", ".join(ignored))
    return out


def _tool_name(file_name: str) -> str:
    """`fs_read.sh` → `fs_read`, as the Loki format names a tool after its file."""
    import re

    stem = file_name.rsplit(".", 1)[0] if "." in file_name else file_name
    return "_".join(t for t in re.split(r"[^a-z0-9]+", stem.lower()) if t)
