"""KepApp's approval mode and rules screen (a mixin): ctrl+s cycles read-only → ask → auto,
the palette picks any mode (yolo only there, never by a stray key), and the footer shows it
(yolo in red); alt+r (or the palette) opens the rules screen. What a mode or a rule means is
decided in core/modes.py and core/policy.py, never here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import App
from textual.command import SimpleCommand

from tuiapp.security import modes
from tuiapp.ui.literal import say
from tuiapp.ui.widgets.status_footer import StatusFooter

if TYPE_CHECKING:
    from tuiapp.project.workspace import Workspace


class ModeActions(App[int]):
    """Mixed into KepApp, which provides the workspace."""

    ws: Workspace

    def action_switch_mode(self) -> None:
        self.set_mode(modes.next_mode(self.ws.mode, include_yolo=False))

    def choose_mode(self) -> None:
        current = self.ws.mode
        choices = [SimpleCommand(mode, (lambda m=mode: self.set_mode(m)),
                                 f"current · {modes.LABELS[mode]}" if mode == current
                                 else modes.LABELS[mode])
                   for mode in modes.MODES]
        self.search_commands(choices, placeholder="Approval mode for this session…")

    def set_mode(self, mode: str) -> None:
        """For the rest of this session, from the next call (never saved)."""
        self.ws.set_mode(mode)
        self.show_mode()
        severity = "warning" if mode == "yolo" else "information"
        self.notify(say("Approval mode: {}", modes.LABELS[mode]), title="Mode", severity=severity)

    def show_mode(self) -> None:
        self.query_one(StatusFooter).mode = self.ws.mode

    def action_show_rules(self) -> None:
        from tuiapp.ui.screens.rules import RulesScreen

        self.push_screen(RulesScreen(self.ws, self.reload_rules))

    def reload_rules(self) -> None:
        """After the rules screen edited a file: the new rules apply from the next call."""
        from tuiapp.project import config as project_config
        from tuiapp.settings import config_types

        try:
            self.ws.reconfigure(project_config.load(self.ws.root))
        except config_types.ConfigError as e:
            self.notify(say("Config not reloaded: {}", e), severity="error", timeout=10)
