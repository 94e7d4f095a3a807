"""Command palette (ctrl+p): kep's entries, and the pickers they open (model, theme, session)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.app import SystemCommand
from textual.command import CommandPalette, DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

from tuiapp.settings.config_types import Config
from tuiapp.ui.literal import highlighted, literal, say

if TYPE_CHECKING:
    from tuiapp.ui.app_api import KepApp


def kep_commands(app: KepApp) -> Iterator[SystemCommand]:
    yield SystemCommand("Switch model", "Use another model from the next message on",
                        app.choose_model)
    yield SystemCommand("Reasoning effort", "off, low, medium or high for this session's "
                        "model", app.choose_reasoning)
    yield SystemCommand("Compact conversation", "Summarise the conversation so far with this "
                        "model and go on from the summary (the messages stay in the session)",
                        app.action_compact)
    yield SystemCommand("Temperature", "How varied this session's replies are (0 to 2, or the "
                        "model's default)", app.choose_temperature)
    yield SystemCommand("Max output tokens", "The longest reply this session's model may "
                        "write", app.choose_max_output)
    yield SystemCommand("Show or hide thinking", "Open or collapse every thinking block "
                        "(ctrl+b)", app.action_toggle_thinking)
    yield SystemCommand("Approval mode", say(  # type: ignore[arg-type]
        "now {}: read-only, ask, auto or yolo for this session (ctrl+s cycles all but yolo)",
        app.ws.mode), app.choose_mode)
    yield SystemCommand("Approval rules", "Every rule in force, where it is written, what it "
                        "decided; disable, delete, move (alt+r)", app.action_show_rules)
    yield SystemCommand("Switch theme", "Pick a theme; the choice is saved to config",
                        app.choose_theme)
    yield SystemCommand("New session", "Start a fresh conversation (ctrl+n)",
                        app.action_new_session)
    yield SystemCommand("Open a past session", "Resume an earlier conversation of this project "
                        "(ctrl+o)", app.action_open_session)
    yield SystemCommand("Undo file changes", "Put back the files the last call of kep's "
                        "built-ins wrote (/undo)", app.action_undo)
    yield SystemCommand("Rewind", "Pick one of your messages: rewind the conversation to it, "
                        "restore the files, or both (ctrl+up)", app.action_rewind)
    yield SystemCommand("Search sessions", "Find messages in this project's sessions (or every "
                        "project's) and open one at that message (/search WORDS)",
                        app.action_search)
    yield SystemCommand("Export session", "Save this conversation as Markdown",
                        app.action_export_session)
    yield SystemCommand("Toggle tool panes", "Show or hide the live tool output (ctrl+t)",
                        app.action_toggle_panes)
    yield SystemCommand("Toggle functions panel", "List every tool, broken ones with the reason "
                        "(ctrl+f)", app.action_toggle_functions)
    yield SystemCommand("New function", "Write a keprompt Python tool from the template and "
                        "open it in the workbench", app.action_new_function)
    yield SystemCommand("Check tools", "Run the protocol checklist on this project's tools",
                        app.action_check_tools)
    yield SystemCommand("Reload tools", "Scan the function directories again",
                        app.action_reload_tools)
    yield SystemCommand("Copy last reply", "The selected text, else the last reply, as "
                        "Markdown (ctrl+l)", app.action_copy_reply)
    yield SystemCommand("Show welcome", "The first-run panel: the offline model, the tools "
                        "found, how to set up a real provider", app.action_show_welcome)
    yield SystemCommand("Show config path", "Which config files kep reads, and where to put one",
                        app.action_show_config)
    yield SystemCommand("Cancel running tool", "Stop every tool call still running (ctrl+g)",
                        app.action_cancel_tools)
    yield SystemCommand("Retry", "Send the last request again after an error (ctrl+r)",
                        app.action_retry)
    yield SystemCommand("Help", "kep's topic pages, searchable (f1)", app.action_help)
    from tuiapp.project import inventory

    if inventory.question(app.ws.config) is not None:  # after "Not now": change your mind here
        from tuiapp.ui.screens.trust import ask_again

        yield SystemCommand("Trust this folder", "Load this project's tools, MCP servers, .env "
                            "and kep.toml (asks first)", partial(ask_again, app))
    # MCP servers' entries carry a server's name and its stderr: McpCommands lists them
    # (SystemCommand's title and help are read as markup).


class McpCommands(Provider):
    """`MCP: restart NAME` for each configured server, with its state (perhaps the last line
    of its stderr) as the help line: both foreign, so shown literally; `MCP: log in NAME` for
    a server that needs an OAuth login."""

    def _entries(self) -> list[tuple[str, str, partial[None]]]:
        app = cast("KepApp", self.app)
        if app.ws.mcp is None:
            return []
        from tuiapp.ui.mcp_login import log_in, needs_login
        from tuiapp.ui.screens.resources import open_screen

        states = sorted(app.ws.mcp.states().items())
        resources = [("MCP: resources", "attach a server's resource to the next message, "
                      "or subscribe to it", partial(open_screen, app))]
        return [*resources, *((f"MCP: restart {name}", state.describe(),
                               partial(app.restart_mcp_server, name))
                              for name, state in states
                              if name in app.ws.config.mcp_servers or state.log_path),
                *((f"MCP: log in {name}", "an OAuth login in your browser",
                   partial(app.run_worker, partial(log_in, app, name), exclusive=False))
                  for name, state in states if needs_login(state.reason))]

    async def discover(self) -> Hits:
        for title, help_text, action in self._entries():
            yield DiscoveryHit(literal(title, line=True), action, text=title,
                               help=say("now {}", help_text))  # type: ignore[arg-type]  # Content passes

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, action in self._entries():
            if (score := matcher.match(title)) > 0:
                yield Hit(score, highlighted(matcher, title), action, text=title,
                          help=say("now {}", help_text))  # type: ignore[arg-type]


def model_candidates(cfg: Config, current: str, recent: Iterable[str]) -> dict[str, str]:
    """Model name → a word about it: the current one, offline, each provider's default model,
    and models used before in this project."""
    out = {current: "current model", "offline": "kep's built-in model: no network, no key"}
    for p in cfg.providers.values():
        if p.api != "offline" and p.default_model:
            ready = not p.api_key_env or p.api_key()
            out.setdefault(f"{p.name}/{p.default_model}",
                           f"{p.api} API" if ready else f"needs {p.api_key_env}")
    for name in recent:
        out.setdefault(name, "used before in this project")
    return out


class ModelCommands(Provider):
    """Known models, plus "Use model X" for any PROVIDER/MODEL typed in."""

    def _models(self) -> dict[str, str]:
        return cast("KepApp", self.app).model_choices()

    def _pick(self, name: str) -> None:
        cast("KepApp", self.app).switch_model(name)

    async def _listed(self, known: dict[str, str]) -> dict[str, tuple[str, bool]]:
        """What the providers' servers list (after the configured ones): name → (note,
        pickable); a provider that could not be listed is one line, not pickable."""
        out: dict[str, tuple[str, bool]] = {}
        for listing in await cast("KepApp", self.app).model_lists():
            if listing.error:
                out[f"{listing.provider}: {listing.error}"] = ("cannot list models", False)
            for model in listing.models:
                name = f"{listing.provider}/{model}"
                if name not in known:
                    out.setdefault(name, (f"listed by {listing.provider}", True))
        return out

    def _unlisted(self, line: str) -> None:
        self.app.notify(literal(line), title="Model list", severity="warning")

    async def discover(self) -> Hits:
        models = self._models()
        for name, note in models.items():
            yield DiscoveryHit(literal(name, line=True), partial(self._pick, name),
                               text=name, help=literal(note))  # type: ignore[arg-type]
        for name, (note, pickable) in (await self._listed(models)).items():
            yield DiscoveryHit(literal(name, line=True),
                               partial(self._pick if pickable else self._unlisted, name),
                               text=name, help=literal(note))  # type: ignore[arg-type]

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        models = self._models()
        for name, note in models.items():
            if (score := matcher.match(name)) > 0:
                yield Hit(score, highlighted(matcher, name), partial(self._pick, name),
                          text=name, help=literal(note))  # type: ignore[arg-type]
        for name, (note, pickable) in (await self._listed(models)).items():
            if pickable and (score := matcher.match(name)) > 0:
                yield Hit(score, highlighted(matcher, name), partial(self._pick, name),
                          text=name, help=literal(note))  # type: ignore[arg-type]
        typed = query.strip()
        if "/" in typed and typed not in models:
            yield Hit(1.0, Content.assemble("Use model ", (typed, "bold")),
                      partial(self._pick, typed), text=typed, help="PROVIDER/MODEL")


def open_model_picker(app: KepApp) -> None:
    app.push_screen(CommandPalette(providers=[ModelCommands],
                                   placeholder="Model: pick one, or type PROVIDER/MODEL…"))
