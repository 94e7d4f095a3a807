"""Loki agents: `agents/NAME/config.yaml` (and `graph.yaml`) → the same Agent llm-functions
agents load into.

What kep honours of a config.yaml: name, description, version, instructions,
dynamic_instructions (the agent's `_instructions` function), variables, conversation_starters,
documents, global_tools (tools of the functions dir, by file name) and mcp_servers (only those
servers' tools are offered). Every other key that is set is named in a notice, never dropped
silently. A graph.yaml (Loki's multi-step graphs) is not run by kep: an agent with only a graph
fails to start saying so; one with a config.yaml too starts from it, with a notice.
No textual here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tuiapp.core.agent import Agent

HONOURED = {"name", "description", "version", "instructions", "dynamic_instructions",
            "variables", "conversation_starters", "documents", "global_tools", "mcp_servers"}
GRAPH_NOTICE = ("graph.yaml is a Loki graph (multi-step) agent; kep does not run graphs")


def is_loki_agent_dir(d: Path) -> bool:
    return ((d / "config.yaml").is_file() or (d / "graph.yaml").is_file()) \
        and not (d / "index.yaml").is_file()


def load(agent_dir: Path) -> Agent:
    import yaml

    from tuiapp.core.agent import Agent, AgentError, AgentVariable

    config = agent_dir / "config.yaml"
    if not config.is_file():
        raise AgentError(f"agent {agent_dir.name}: {agent_dir / 'graph.yaml'}: {GRAPH_NOTICE}, "
                         "and there is no config.yaml to start it from")
    try:
        data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    except OSError as e:
        raise AgentError(f"{config}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise AgentError(f"{config}: not UTF-8 text") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise AgentError(f"{config}{where}: not valid YAML: {getattr(e, 'problem', e)}") from None
    if not isinstance(data, dict):
        raise AgentError(f"{config}: expected a mapping (name, instructions, …)")

    def text(key: str) -> str:
        v = data.get(key)
        if v is None:
            return ""
        if not isinstance(v, str | int | float):
            raise AgentError(f"{config}: {key}: expected text")
        return str(v)

    def strings(key: str) -> list[str]:
        v = data.get(key) or []
        if not isinstance(v, list) or not all(isinstance(x, str | int | float) for x in v):
            raise AgentError(f"{config}: {key}: expected a list of strings")
        return [str(x) for x in v]

    variables = []
    for i, raw in enumerate(data.get("variables") or [], 1):
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
            raise AgentError(f"{config}: variables[{i}]: expected {{name, description, default}}")
        default = raw.get("default")
        variables.append(AgentVariable(raw["name"], str(raw.get("description") or ""),
                                       None if default is None else str(default)))
    notices = _notices(agent_dir, data)
    tools = []
    for entry in strings("global_tools"):
        stem = entry.rsplit("/", 1)[-1]
        if not stem.endswith((".sh", ".py", ".ts")):
            notices.append(f"agent {agent_dir.name}: global_tools entry {entry!r} is not a tool "
                           "file name (Loki's mapping_tools aliases are not read by kep); "
                           "a tool of that name is used if there is one")
        tools.append(_tool_name(stem))
    return Agent(
        name=agent_dir.name,
        dir=agent_dir,
        llm_root=agent_dir.parent.parent,
        title=text("name") or agent_dir.name,
        description=text("description"),
        version=text("version"),
        instructions=text("instructions"),
        dynamic_instructions=bool(data.get("dynamic_instructions")),
        variables=variables,
        starters=strings("conversation_starters"),
        documents=strings("documents"),
        shared_tools=tools,
        kind="loki",
        mcp_servers=strings("mcp_servers"),
        notices=notices,
    )


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
