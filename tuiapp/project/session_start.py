"""Starting a session from a keprompt `.prompt` file or an llm-functions agent.

`prepare()` reads the file (syntax errors come out here, naming file and line) and works out
which variables are still missing. Once they are all given, `plan.ready(workspace)` checks the
prompt against the live tool registry (nothing is sent when it fails) and runs an agent's
dynamic `_instructions`; `plan.start(conversation)` runs a prompt's statements. The headless
`kep run` and the TUI both drive a session this way. No textual here.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tuiapp.conversation import agent as agent_mod
from tuiapp.conversation import prompt_file, prompt_variables
from tuiapp.conversation.conversation import Conversation
from tuiapp.conversation.prompt_model import PromptError, PromptNotFound
from tuiapp.conversation.prompt_run import PromptRun
from tuiapp.vocab.events import Event, Notice, ToolFinished
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

if TYPE_CHECKING:
    from tuiapp.project.workspace import Workspace

Kind = Literal["prompt", "agent"]


class StartError(Exception):
    """The session cannot start as asked (unknown name, bad file, bad or missing values)."""

    def __init__(self, message: str, missing: Sequence[VariableField] = ()) -> None:
        super().__init__(message)
        self.missing = list(missing)


@dataclass(frozen=True)
class VariableField:
    """One entry of the variables form (TUI) or of the usage error (headless)."""

    name: str
    description: str = ""
    default: str | None = None  # shown pre-filled; None: the user must give a value
    value: str | None = None  # given with --set

    @property
    def required(self) -> bool:
        return self.default is None


@dataclass(frozen=True)
class Choice:
    """A prompt or agent the palette can offer."""

    kind: Kind
    name: str
    description: str
    path: Path


def parse_sets(items: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise StartError(f"--set {item!r}: expected NAME=VALUE")
        out[key.strip()] = value
    return out


def choices(ws: Workspace) -> list[Choice]:
    """The project's prompts and agents, for the command palette. Broken files are listed too
    (choosing one shows its error)."""
    out: list[Choice] = []
    for path in prompt_file.list_prompts(ws.root):
        out.append(Choice("prompt", path.stem, _prompt_summary(path), path))
    mcp = getattr(ws, "mcp", None)
    for server, state in sorted(mcp.states().items()) if mcp is not None else ():
        for name in state.prompts:  # MCP prompts start a session too
            out.append(Choice("prompt", f"mcp:{server}/{name}", f"MCP prompt of {server}",
                              Path(f"mcp:{server}/{name}")))
    for d in agent_mod.list_agents(ws.root, ws.config):
        try:
            a = agent_mod.load_agent(d)
            desc = a.description or a.title
        except agent_mod.AgentError as e:
            desc = f"broken: {e}"
        out.append(Choice("agent", d.name, desc, d))
    return out


def _prompt_summary(path: Path) -> str:
    try:
        pf = prompt_file.load(path)
    except PromptError as e:
        return f"broken: {e.message} (line {e.line})"
    desc = pf.meta.get("description")
    if isinstance(desc, str) and desc:
        return desc
    user = next((s.value for s in pf.statements if s.keyword == ".user"), "")
    return user.splitlines()[0][:80] if user else f"{pf.name}"


@dataclass
class StartPlan:
    kind: Kind
    name: str
    workspace: Workspace
    values: dict[str, str] = field(default_factory=dict)  # --set / form
    prompt: PromptRun | None = None
    agent: agent_mod.Agent | None = None
    notices: list[str] = field(default_factory=list)
    _instructions: str | None = field(default=None, init=False)  # dynamic_instructions output
    _system_cache: tuple[tuple[str, ...], str] | None = field(default=None, init=False)
    _now: dict[str, str] = field(default_factory=dict, init=False)

    # ---- what the UI shows -----------------------------------------------------------------

    @property
    def label(self) -> str:
        """Footer text: `agent: coder`, `prompt: review`."""
        return f"{self.kind}: {self.name}"

    @property
    def starters(self) -> list[str]:
        return list(self.agent.starters) if self.agent else []

    def fields(self) -> list[VariableField]:
        """Every variable the user may set, pre-filled with its default and any --set value."""
        if self.agent is not None:
            return [VariableField(v.name, v.description, v.default, self.values.get(v.name))
                    for v in self.agent.variables]
        assert self.prompt is not None
        out = []
        for v in prompt_variables.variables(self.prompt.prompt):
            default = prompt_variables.render_value(v.default) if v.has_default else None
            desc = "from .prompt params" if v.has_default else f"used on line {v.line}"
            out.append(VariableField(v.name, desc, default, self.values.get(v.name)))
        return out

    def missing(self) -> list[VariableField]:
        return [f for f in self.fields() if f.required and not f.value]

    def with_values(self, values: Mapping[str, str]) -> StartPlan:
        """The same start with more values (the form's answers); --set values stay unless
        the form changed them."""
        return prepare(self.workspace, **{self.kind: self.name},  # type: ignore[arg-type]
                       sets={**self.values, **values})

    # ---- what the session gets -------------------------------------------------------------

    @property
    def env(self) -> dict[str, str]:
        """Added to every tool's environment: LLM_AGENT_VAR_<NAME> for an agent."""
        return self.agent.env(self.values) if self.agent else {}

    def allow_only(self, name: str) -> bool:
        if self.prompt is not None:
            return self.prompt.allow_only(name)
        assert self.agent is not None
        return self.agent.allows(self.workspace.registry.tools_for(self.agent.name).get(name))

    def visible_tools(self) -> list[ToolSpec]:
        tools = self.workspace.registry.tools_for(self.agent.name if self.agent else None)
        return [s for n, s in tools.items() if self.allow_only(n)]

    def system_text(self) -> str:
        """This start's part of the system prompt."""
        if self.prompt is not None:
            return self.prompt.system_text()
        assert self.agent is not None
        tools = self.visible_tools()
        key = tuple(sorted(t.name for t in tools))
        if self._system_cache is None or self._system_cache[0] != key:
            self._system_cache = (key, self._agent_system(tools))
        return self._system_cache[1]

    def _agent_system(self, tools: list[ToolSpec]) -> str:
        assert self.agent is not None
        if not self._now:  # fixed once: a system prompt that changes every request defeats caching
            self._now = agent_mod.builtin_values(self.workspace.root, [])
        builtins = {**self._now, "__tools__": agent_mod.tools_listing(tools)}
        values = {**builtins, **agent_mod.variable_values(self.agent, self.values)}
        template = self._instructions if self._instructions is not None else self.agent.instructions
        text = agent_mod.interpolate(template, values)
        docs = agent_mod.read_documents(self.agent, self.workspace.root)
        for n in docs.notices:
            if n not in self.notices:
                self.notices.append(n)
        return "\n\n".join(p for p in (text.strip(), docs.text) if p)

    # ---- running ---------------------------------------------------------------------------

    async def ready(self, runner: Any | None = None) -> None:
        """After a registry refresh: check the prompt against the tools (PromptError, nothing
        sent) or fetch an agent's dynamic instructions (needs `runner`)."""
        missing = self.missing()
        if missing:
            raise StartError(missing_message(self, missing), missing)
        if self.prompt is not None:
            self.prompt.check()
            return
        if self.agent is not None and self.agent.dynamic_instructions and runner is not None:
            self._instructions = await self._dynamic_instructions(runner)
            self._system_cache = None
        self.system_text()  # reads the documents now, so their notices are known

    async def start(self, conv: Conversation) -> str:
        """Run a prompt's statements; an agent has none (it says what it noticed, then waits
        for the user). Raises PromptError when a statement cannot run."""
        if self.prompt is None:
            for text in self.notices:
                conv.emit(Notice(text, "warning"))
            return "end_turn"
        return await self.prompt.run(conv)

    async def _dynamic_instructions(self, runner: Any) -> str | None:
        """Call the agent's `_instructions` function, as AIChat does for
        `dynamic_instructions: true`; its output replaces `instructions`."""
        assert self.agent is not None
        spec = _instructions_spec(self.agent,
                                  self.workspace.registry.tools_for(self.agent.name).values())
        if spec is None:
            self.notices.append(f"agent {self.name}: dynamic_instructions is set but no tool of "
                                "its tools file was found to run `_instructions` with")
            return None
        call = ToolCall(f"instr_{uuid.uuid4().hex[:8]}", spec.name, {}, "{}")
        events: list[Event] = []
        fin: ToolFinished = await runner.execute(spec, call, events.append)
        if fin.status != "ok" or not fin.result.strip():
            self.notices.append(f"agent {self.name}: `_instructions` {fin.status}: "
                                f"{fin.result.strip()[:300] or 'no output'}; using index.yaml "
                                "instructions")
            return None
        return fin.result


def _instructions_spec(agent: agent_mod.Agent, tools: Any) -> ToolSpec | None:
    """A spec that runs the agent's `_instructions` function, made from one of its tools
    (same file, runtime and environment; only the function differs)."""
    sibling = next((s for s in tools if agent.owns(s)), None)
    if sibling is None:
        return None
    run = dict(sibling.run)
    run["function"] = "_instructions"
    if run.get("kind") == "bash":
        run["params"] = []
    return ToolSpec("_instructions", "dynamic instructions", {"type": "object", "properties": {}},
                    sibling.format, sibling.source, run=run)


def missing_message(plan: StartPlan, missing: Sequence[VariableField]) -> str:
    lines = [f"{plan.kind} {plan.name} needs values for: "
             + ", ".join(f.name for f in missing)]
    for f in missing:
        lines.append(f"  --set {f.name}=VALUE" + (f"   ({f.description})" if f.description else ""))
    return "\n".join(lines)


def prepare(ws: Workspace, *, prompt: str | None = None, agent: str | None = None,
            sets: Mapping[str, str] | None = None) -> StartPlan:
    """Read the prompt or agent named (not yet checked against the tools). Raises StartError
    (unknown name, unknown agent variable) or PromptError (syntax, with file and line)."""
    values = dict(sets or {})
    if prompt and agent:
        raise StartError("give --prompt or --agent, not both")
    if prompt:
        from tuiapp.project import mcp_prompt_start as prompt_start

        ref = prompt_start.parse(prompt)
        if ref is not None:  # a prompt of an MCP server: mcp:SERVER/NAME
            mcp_run = prompt_start.McpPromptRun(ws, ref[0], ref[1], values)
            return StartPlan("prompt", prompt, ws, values, prompt=mcp_run)  # type: ignore[arg-type]
        try:
            path = prompt_file.find_prompt(ws.root, prompt)
        except PromptNotFound as e:
            raise StartError(str(e)) from None
        pf = prompt_file.load(path, ws.root)
        run = PromptRun(pf, ws.root, lambda: ws.registry.tools, values)
        return StartPlan("prompt", path.stem, ws, values, prompt=run, notices=list(run.notices))
    if agent:
        try:
            a = agent_mod.load_agent(agent_mod.find_agent(ws.root, agent, ws.config))
        except agent_mod.AgentError as e:
            raise StartError(str(e)) from None
        unknown = a.unknown(values)
        if unknown:
            names = ", ".join(v.name for v in a.variables) or "none"
            raise StartError(f"agent {agent} has no variable {', '.join(map(repr, unknown))} "
                             f"(its variables: {names})")
        notices = [*a.notices, *agent_mod.unknown_mcp_servers(a, ws.config)]
        return StartPlan("agent", a.name, ws, values, agent=a, notices=notices)
    raise StartError("nothing to start: give --prompt NAME or --agent NAME")
