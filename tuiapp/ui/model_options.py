"""The session's model from the palette: the model lists, compaction, and the options
(reasoning effort, temperature, the longest reply). Each option applies to this session's
model from the next request on; the config's values ([providers.NAME] or its models."M"
table) stay the defaults. Part of KepApp."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from textual import work
from textual.app import App
from textual.command import SimpleCommand

from tuiapp.settings.config_models import REASONING_LEVELS
from tuiapp.ui.literal import say

if TYPE_CHECKING:
    from tuiapp.project.workspace import Workspace
    from tuiapp.providers.model_lists import ModelList
    from tuiapp.ui.chat import ChatSession


class ModelOptionActions(App[int]):
    ws: Workspace

    if TYPE_CHECKING:
        @property
        def chat(self) -> ChatSession: ...
        @property
        def busy(self) -> bool: ...
        def set_state(self, state: str) -> None: ...

    def action_compact(self) -> None:
        """The palette's "Compact conversation": summarise what came before, now."""
        if self.busy:
            self.notify("kep is still answering: compact when it is done.", severity="warning")
            return
        if not self.chat.history:
            self.notify("Nothing to compact yet.")
            return
        self.set_state("streaming")
        self._compact()

    @work(exclusive=True, group="conversation", exit_on_error=False)
    async def _compact(self) -> None:
        try:
            await self.chat.compact()
        finally:
            self.set_state("idle")

    async def model_lists(self) -> list[ModelList]:
        """Each provider's `/models` (cached), for the model picker: the providers with a key
        or none needed; the others show as "needs KEY" among the configured models."""
        from tuiapp.providers.model_lists import list_models

        ready = [p for p in self.ws.config.providers.values()
                 if p.api != "offline" and (not p.api_key_env or p.api_key())]
        return list(await asyncio.gather(*(list_models(p) for p in ready)))

    def choose_reasoning(self) -> None:
        current = self.chat.provider.reasoning
        notes = {"off": "no thinking (or the least the model allows)",
                 "low": "a little", "medium": "more", "high": "the most, slowest"}
        choices = [SimpleCommand(level, (lambda v=level: self.set_reasoning(v)),
                                 "current" if level == current else notes[level])
                   for level in REASONING_LEVELS]
        self.search_commands(choices, placeholder="Reasoning effort for this session…")

    def set_reasoning(self, level: str) -> None:
        """For this session's model from the next request on (kep.toml's
        [providers.NAME] reasoning keeps the default)."""
        self.chat.provider.reasoning = level
        self.notify(say("Reasoning: {} (from the next message on)", level))

    def choose_temperature(self) -> None:
        current = self.chat.provider.temperature
        notes = {None: "the model's default", 0.0: "the same answer each time",
                 0.2: "focused", 0.7: "varied", 1.0: "creative"}
        choices = [SimpleCommand("default" if t is None else f"{t:g}",
                                 (lambda v=t: self.set_option("temperature", v)),
                                 "current" if t == current else notes[t])
                   for t in notes]
        self.search_commands(choices, placeholder="Temperature for this session…")

    def choose_max_output(self) -> None:
        current = self.chat.provider.max_output_tokens
        sizes: tuple[int | None, ...] = (None, 1024, 4096, 8192, 16384, 32768, 65536)
        choices = [SimpleCommand("default" if n is None else f"{n:,} tokens",
                                 (lambda v=n: self.set_option("max_output_tokens", v)),
                                 "current" if n == current else
                                 "the API's default" if n is None else None)
                   for n in sizes]
        self.search_commands(choices, placeholder="Longest reply for this session…")

    def set_option(self, name: str, value: float | int | None) -> None:
        """temperature or max_output_tokens for this session's model, from the next request
        (the config's values stay the default)."""
        setattr(self.chat.provider, name, value)
        if name == "temperature" and value is not None and self.chat.provider.config.api == \
                "anthropic":
            self.notify("Anthropic's Messages API takes no temperature: this model's "
                        "requests go without it.", severity="warning")
            return
        shown = "default" if value is None else f"{value:g}"
        self.notify(say("{}: {} (from the next message on)",
                        name.replace("_", " ").capitalize(), shown))

