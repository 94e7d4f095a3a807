"""One project opened for work: config, tool registry, runner, session store.

The same object drives `kep run`, `kep call`, `kep mcp serve` and the TUI, so each of those
stays a thin shell. No textual here.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tuiapp import paths
from tuiapp.config import Config
from tuiapp.core.conversation import Approver, Conversation, Emit
from tuiapp.core.messages import Message
from tuiapp.providers.base import Provider
from tuiapp.tools.registry import Registry
from tuiapp.tools.runner import Runner

BASE_PROMPT = (
    "You are kep, an assistant in a terminal chat with function calling. Use the tools when "
    "they help; tool results come from real programs run in the user's project. Be concise."
)


@dataclass
class Workspace:
    config: Config
    registry: Registry = field(init=False)

    def __post_init__(self) -> None:
        self.registry = Registry(self.config)

    @property
    def root(self) -> Path:
        return self.config.project_root

    def reconfigure(self, config: Config) -> None:
        """A new config (kep.toml edited): rules and settings apply from the next call."""
        self.config = config
        self.registry.reconfigure(config)

    def runner(self, session_id: str) -> Runner:
        return Runner(self.config, spool_dir=paths.data_dir() / "spool" / session_id)

    def system_prompt(self) -> str:
        return self.config.system_prompt or BASE_PROMPT

    def conversation(
        self,
        provider: Provider,
        runner: Runner,
        approver: Approver,
        emit: Emit,
        history: Sequence[Message] = (),
    ) -> Conversation:
        return Conversation(
            provider=provider,
            tools=lambda: self.registry.tools,
            approval=lambda: self.config.approval,
            approver=approver,
            executor=runner.execute,
            emit=emit,
            system=self.system_prompt,
            max_steps=self.config.max_steps,
            history=list(history),
            env=os.environ,
        )
