"""An agent as data (llm-functions `index.yaml` or Loki `config.yaml`): its variables, its
tool set and the environment its tools get. Loading lives in agent, agent_yaml, loki_agent."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tuiapp.vocab.tool_specs import ToolSpec


def env_name(name: str) -> str:
    return "LLM_AGENT_VAR_" + "".join(c if c.isalnum() else "_" for c in name).upper()


class AgentError(Exception):
    """A broken or unknown agent; the message names the file and what to fix."""


@dataclass(frozen=True)
class AgentVariable:
    name: str
    description: str = ""
    default: str | None = None

    @property
    def env_name(self) -> str:
        return env_name(self.name)


@dataclass
class Agent:
    name: str  # the directory name: what `--agent NAME` takes
    dir: Path
    llm_root: Path  # the llm-functions root holding agents/ (and tools/)
    title: str = ""
    description: str = ""
    version: str = ""
    instructions: str = ""
    dynamic_instructions: bool = False
    variables: list[AgentVariable] = field(default_factory=list)
    starters: list[str] = field(default_factory=list)
    documents: list[str] = field(default_factory=list)
    shared_tools: list[str] = field(default_factory=list)  # tools.txt / global_tools: names
    kind: str = "llm-functions"  # or "loki" (config.yaml)
    mcp_servers: list[str] = field(default_factory=list)  # loki: the MCP servers it may use
    notices: list[str] = field(default_factory=list)  # what kep does not honour, said once

    @property
    def index(self) -> Path:
        return self.dir / ("config.yaml" if self.kind == "loki" else "index.yaml")

    def missing(self, values: Mapping[str, str]) -> list[AgentVariable]:
        return [v for v in self.variables if v.default is None and not values.get(v.name)]

    def values_with_defaults(self, values: Mapping[str, str]) -> dict[str, str]:
        out = {v.name: v.default for v in self.variables if v.default is not None}
        out.update({k: v for k, v in values.items()})
        return out  # type: ignore[return-value]

    def unknown(self, values: Mapping[str, str]) -> list[str]:
        names = {v.name for v in self.variables}
        return [k for k in values if k not in names]

    def env(self, values: Mapping[str, str]) -> dict[str, str]:
        """LLM_AGENT_VAR_<NAME> for every variable with a value, as AIChat exports them."""
        full = self.values_with_defaults(values)
        return {env_name(k): str(v) for k, v in full.items() if v is not None}

    def owns(self, spec: ToolSpec) -> bool:
        """Is this tool one of the agent's own (its tools.{sh,py,js} or built functions.json)?"""
        if spec.format != self.kind or spec.run.get("agent") != self.name:
            return False
        root = spec.run.get("config_dir" if self.kind == "loki" else "root", "")
        return Path(str(root)).resolve() == self.llm_root.resolve()

    def allows(self, spec: ToolSpec | None) -> bool:
        """The agent's tool set: its own tools, those tools.txt / global_tools name and, for a
        Loki agent, the tools of the MCP servers it lists."""
        if spec is None:
            return False
        if self.owns(spec):
            return True
        if spec.format == "mcp":
            return spec.run.get("server") in self.mcp_servers
        return spec.name in self.shared_tools and not spec.run.get("agent")
