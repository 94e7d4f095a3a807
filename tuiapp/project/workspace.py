"""One project opened for work: config, tool registry, runner, session store.

The same object drives `kep run`, `kep call`, `kep mcp serve` and the TUI, so each of those
stays a thin shell. No textual here.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from tuiapp.project.system_prompt import base_prompt, compose
from tuiapp.security import trust
from tuiapp.security.grants import SessionGrants
from tuiapp.settings import paths
from tuiapp.settings.config_types import ApprovalConfig, Config, Rule
from tuiapp.tools import unavailable
from tuiapp.tools.registry import Registry
from tuiapp.vocab.tool_specs import ToolSpec

if TYPE_CHECKING:  # imported where used: `kep functions` needs none of them
    from tuiapp.conversation.conversation import Approver, Conversation, Emit
    from tuiapp.mcp.client import McpManager, StateListener
    from tuiapp.providers.base import Provider
    from tuiapp.tools.hooks import Hooks
    from tuiapp.tools.runner import Runner
    from tuiapp.vocab.messages import Message

class SessionStart(Protocol):
    """The active .prompt file or agent (tuiapp.project.session_start.StartPlan), as the
    workspace uses it: its tool environment, tool allow-list and system text."""

    @property
    def kind(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def env(self) -> dict[str, str]: ...

    def allow_only(self, name: str) -> bool: ...

    def system_text(self) -> str: ...


@dataclass
class Workspace:
    config: Config
    registry: Registry = field(init=False)
    # The active .prompt file or agent, once a session starts
    # with one: its system text, tool allow-list and tool environment apply from then on.
    start: SessionStart | None = field(default=None, init=False)
    # The project's MCP servers, once start_mcp() ran and there is at least one.
    mcp: McpManager | None = field(default=None, init=False)
    _runners: list[Runner] = field(default_factory=list, init=False)
    # "Allow for this session" answers: in memory only, applied before the config's rules.
    grants: SessionGrants = field(init=False)
    # The approval mode chosen for this session (--mode, the palette, the key), kept over
    # config reloads; None: the mode the config files chose.
    session_mode: str | None = field(default=None, init=False)
    # Rules switched off for this session on the rules screen (by rule_key), and how many
    # calls each rule's file and line decided this session.
    disabled: set[tuple[object, ...]] = field(default_factory=set, init=False)
    decided: Counter[tuple[str, int]] = field(default_factory=Counter, init=False)
    _emit: Emit | None = field(default=None, init=False)  # where session hooks report

    def __post_init__(self) -> None:
        self.registry = Registry(self.config)
        self.grants = SessionGrants()
        unavailable.explain = self.why_unavailable  # the offline model says why

    def why_unavailable(self, name: str) -> str | None:
        """Why no tool called `name` is offered, when kep knows: its file is broken, or it
        is in this project's functions folder and the project is not trusted."""
        for b in self.registry.broken:
            if name in (b.name, Path(b.source).name, Path(b.source).stem):
                return f"it is broken ({b.error}); `kep functions` lists every problem"
        folder = self.config.project_root / "prompts" / "functions"
        if not trust.state_of(self.config).trusted and folder.is_dir() and any(
                p.stem == name or p.name == name for p in folder.iterdir()):
            return ("this project's folder is not trusted, so its tools are not loaded "
                    "(`kep trust` trusts it)")
        return None

    def has_mcp_servers(self) -> bool:
        """Servers in kep.toml, the project's mcp.json, or a trusted Loki `functions/mcp.json`
        (its agents name those servers even when the project has no mcp.json of its own)."""
        if self.config.mcp_servers or trust.project_has_mcp_json(self.config):
            return True
        if not trust.state_of(self.config).trusted:
            return False
        from tuiapp.mcp.servers import loki_mcp_files

        return bool(loki_mcp_files(self.config))

    def start_mcp(self, *, emit: Emit | None = None, on_state: StateListener | None = None) -> None:
        """Start the MCP servers in the background (never awaited: a slow server never holds
        up the UI or the first prompt). Imports the MCP SDK only when servers are configured."""
        if self.mcp is not None or not self.has_mcp_servers():
            return
        from tuiapp.mcp.client import McpManager

        self.mcp = McpManager.for_registry(self.config, self.registry, emit=emit,
                                           on_state=on_state)
        self.mcp.start()

    async def session_started(self, emit: Emit | None = None) -> None:
        """Fire the session_start hooks (once); aclose fires session_end."""
        if self._emit is None:
            self._emit = emit or (lambda event: None)
            await self.hooks(self._emit).fire("session_start", {"mode": self.mode})

    async def aclose(self) -> None:
        if self._emit is not None:  # bounded by each hook's timeout
            emit, self._emit = self._emit, None
            await self.hooks(emit).fire("session_end", {"mode": self.mode})
        if self.mcp is not None:
            await self.mcp.stop()

    @property
    def root(self) -> Path:
        return self.config.project_root

    def set_mode(self, mode: str) -> None:
        """Switch the approval mode for the rest of the session (from the next decision)."""
        self.session_mode = mode
        self.config = _with_mode(self.config, mode)

    @property
    def mode(self) -> str:
        return self.config.approval.mode

    def approval(self) -> ApprovalConfig:
        """The rules that decide now: this session's grants, then the config's minus those
        disabled for the session; `sandboxed` says whether the walls are up (what `auto`
        mode needs to run a call unasked)."""
        from dataclasses import replace

        from tuiapp.security.sandbox import spawn

        a = self.config.approval
        if self.disabled:
            a = replace(a, rules=tuple(r for r in a.rules if rule_key(r) not in self.disabled))
        if a.mode == "auto" and a.sandboxed != spawn.active():
            a = replace(a, sandboxed=spawn.active())
        return self.grants.apply(a)

    def toggle_rule(self, rule: Rule) -> bool:
        """Disable `rule` for this session, or enable it again; True when now disabled."""
        key = rule_key(rule)
        if key in self.disabled:
            self.disabled.discard(key)
            return False
        self.disabled.add(key)
        return True

    def note_decided(self, event: object) -> None:
        """Count a ToolCallDecided against the rule (file, line) that decided it."""
        file, line = getattr(event, "rule_file", ""), getattr(event, "rule_line", 0)
        if file:
            self.decided[(file, line)] += 1

    def reconfigure(self, config: Config) -> None:
        """A new config (kep.toml edited): rules and settings apply from the next call."""
        if self.session_mode is not None:
            config = _with_mode(config, self.session_mode)
        self.config = config
        self.registry.reconfigure(config)
        for runner in self._runners:
            runner.reconfigure(config)
        if self.mcp is not None:
            self.mcp.reconfigure(config)

    def runner(self, session_id: str) -> Runner:
        from tuiapp.tools.runner import Runner

        formats = None
        if self.mcp is not None:
            from tuiapp.mcp.client import McpFormat
            from tuiapp.tools.formats import default_formats

            formats = [*default_formats(), McpFormat(self.mcp)]
        runner = Runner(self.config, spool_dir=paths.data_dir() / "spool" / session_id,
                        env=self.start.env if self.start else None, formats=formats)
        self._runners.append(runner)
        return runner

    def session_tools(self) -> dict[str, ToolSpec]:
        """The registry's tools minus other agents' own functions: an agent's tools.sh is
        offered only while that agent is active."""
        agent = self.start.name if self.start is not None and self.start.kind == "agent" else None
        return self.registry.tools_for(agent)

    def system_prompt(self) -> str:
        """Base prompt + the project's instructions + the active prompt/agent + extension
        packs + AITool instructions (project.system_prompt)."""
        tools = list(self.session_tools().values())
        session = ""
        if self.start is not None:
            tools = [t for t in tools if self.start.allow_only(t.name)]
            session = self.start.system_text()
        from tuiapp.project import instructions

        base = self.config.system_prompt or base_prompt(self.root.resolve())
        return compose(base, session, tools, instructions.load(self.config).text)

    def conversation(
        self,
        provider: Provider,
        runner: Runner,
        approver: Approver,
        emit: Emit,
        history: Sequence[Message] = (),
    ) -> Conversation:
        from tuiapp.conversation.checkpoints import checkpointing
        from tuiapp.conversation.conversation import Conversation
        return Conversation(
            provider=provider,
            tools=self.session_tools,
            approval=self.approval,
            approver=approver,
            executor=checkpointing(runner.execute, self.root),
            emit=emit,
            system=self.system_prompt,
            max_steps=self.config.max_steps,
            compact_at=lambda: self.config.compact_at,
            history=list(history),
            env=os.environ,
            allow_only=self.start.allow_only if self.start else None,
            tool_settings=lambda: self.config.tools,
            hooks=self.hooks(emit),
        )

    def hooks(self, emit: Emit | None = None) -> Hooks:
        """The config's [[hooks]], run the way tools run; a failing hook of an event that
        can't be denied is a notice."""
        from tuiapp.security import secrets
        from tuiapp.tools.hooks import Hooks
        from tuiapp.vocab.events import Notice

        def notice(text: str) -> None:
            if emit is not None:
                emit(Notice(text, "warning"))

        return Hooks(lambda: self.config.hooks, self.root,
                     lambda: secrets.child_env(self.config), notice)


def _with_mode(config: Config, mode: str) -> Config:
    from dataclasses import replace

    return replace(config, approval=replace(config.approval, mode=mode))


def rule_key(rule: Rule) -> tuple[object, ...]:
    """A rule's identity across reloads (a rule moved or edited is another rule)."""
    return (rule.file, rule.line, rule.tool, rule.action, rule.args, rule.modes)
