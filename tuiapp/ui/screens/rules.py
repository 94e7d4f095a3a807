"""The rules screen (alt+r, or the palette's "Approval rules"): every approval rule in force,
in the order applied, with its file and line, its note (who added it and when), and how
many calls it decided this session. `space` disables or enables the highlighted rule for this
session, `d` twice deletes it from its file, `shift+up` / `shift+down` move it within its
file, `esc` closes. The listing is core/rule_list.py; file edits are tuiapp/rule_edit.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from tuiapp.security.display import printable_line
from tuiapp.security.rule_list import Entry, entries
from tuiapp.ui.literal import say

if TYPE_CHECKING:
    from types import ModuleType

    from tuiapp.project.workspace import Workspace
    from tuiapp.settings.config_types import Rule

CONFIRM_SECONDS = 3.0


class RulesScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    RulesScreen { align: center middle; }
    RulesScreen > Vertical {
        width: 96%; max-width: 140; height: 90%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    RulesScreen OptionList { height: 1fr; border: none; }
    RulesScreen .rules--hint { color: $text-muted; height: auto; }
    RulesScreen .rules--status { height: auto; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="rules_close"),
        Binding("space", "toggle", "Disable / enable", id="rules_toggle"),
        Binding("d", "delete", "Delete", id="rules_delete"),
        Binding("shift+up", "move(-1)", "Move up", id="rules_move_up"),
        Binding("shift+down", "move(1)", "Move down", id="rules_move_down"),
    ]

    def __init__(self, ws: Workspace, reload: Callable[[], None]) -> None:
        super().__init__()
        self.ws = ws
        self._reload = reload  # () -> None: load the config again after a file edit
        self._armed: int | None = None  # the rule a first `d` pointed at
        self.items: list[Entry] = []

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Approval rules, in the order applied"
            yield OptionList(id="rules-list")
            yield Static("", classes="rules--status", id="rules-status")
            yield Static(self._hint(), classes="rules--hint")

    def on_mount(self) -> None:
        self.fill()
        self.query_one(OptionList).focus()

    @staticmethod
    def _hint() -> Content:
        return Content.assemble(
            ("space", "bold"), " disable for this session  ", ("d d", "bold"), " delete  ",
            ("shift+↑/↓", "bold"), " move  ", ("esc", "bold"), " close")

    def fill(self) -> None:
        options = self.query_one(OptionList)
        keep = options.highlighted
        options.clear_options()
        self.items = entries(self.ws.config.approval, hooks=self.ws.config.hooks)
        rules = self.ws.config.approval.rules
        from tuiapp.project.workspace import rule_key

        for e in self.items:
            off = e.kind == "rule" and rule_key(rules[e.index]) in self.ws.disabled
            options.add_option(Option(self._prompt(e, off), id=str(e.position)))
        options.border_title = say("mode {}", self.ws.mode)
        if self.items:
            options.highlighted = min(keep or 0, len(self.items) - 1)

    def _prompt(self, e: Entry, off: bool) -> Content:
        if e.kind == "hook":
            return Content.assemble(
                (f"{e.position:>3} ", "$text-muted"), ("hook ", "bold"), (e.action, "bold"),
                " ", (printable_line(e.tool) or "every tool", "$text-secondary"), "  ",
                printable_line(e.args or ""), "\n     ", (printable_line(e.where), "$text-muted"))
        colour = {"deny": "$error", "allow": "$success", "ask": "$warning"}.get(e.action, "")
        tool = printable_line(e.tool) if e.tool else "any tool"
        parts: list[str | tuple[str, str]] = [
            (f"{e.position:>3} ", "$text-muted"), (f"{e.action:<5}", f"bold {colour}"), " ",
            (tool, "bold")]
        if e.args:
            parts += ["  args ", printable_line(e.args)]
        if e.modes:
            parts += ["  modes ", ",".join(e.modes)]
        if e.shell:
            parts += ["  shell ", printable_line(e.shell)]
        parts += ["\n     ", (printable_line(e.where), "$text-secondary")]
        if e.kind == "rule":
            parts += [("  decided ", "$text-muted"),
                      str(self.ws.decided.get((e.file, e.line), 0))]
        if not e.applies:
            parts += [("  not in this mode", "$text-warning")]
        if off:
            parts += [("  disabled for this session", "bold $text-error")]
        if e.note:
            parts += [("  # ", "$text-muted"), (printable_line(e.note), "$text-muted")]
        return Content.assemble(*parts)  # every piece literal: rule text is from files

    def _current(self) -> tuple[Entry, Rule] | None:
        index = self.query_one(OptionList).highlighted
        if index is None or index >= len(self.items):
            return None
        e = self.items[index]
        if e.kind == "hook":
            self._say(f"hooks are changed in their file ({e.where})")
            return None
        if e.kind != "rule":
            self._say(f"{e.where} is kep's own; it can't be changed here")
            return None
        return e, self.ws.config.approval.rules[e.index]

    def _say(self, text: str, error: bool = False) -> None:
        self.query_one("#rules-status", Static).update(
            Content(printable_line(text)).stylize("$text-error" if error else "$text-success"))

    def action_close(self) -> None:
        self.dismiss(None)

    def action_toggle(self) -> None:
        if (picked := self._current()) is None:
            return
        e, rule = picked
        now_off = self.ws.toggle_rule(rule)
        self._say(f"rule {e.position} ({e.where}) " + (
            "disabled until kep quits" if now_off else "enabled again"))
        self.fill()

    def action_delete(self) -> None:
        if (picked := self._current()) is None:
            return
        e, _rule = picked
        if self._armed != e.position:
            self._armed = e.position
            self._say(f"press d again to delete rule {e.position} from {e.where}")
            self.set_timer(CONFIRM_SECONDS, self._disarm)
            return
        self._armed = None
        self._edit(lambda edit: edit.remove(Path(e.file), e.line),
                   f"rule {e.position} deleted from {e.where}")

    def action_move(self, delta: int) -> None:
        """Up or down among the rules shown next to it that share its file and its part of
        the order (deny rules, or allow/ask rules): what moves is what you see move."""
        if (picked := self._current()) is None:
            return
        e, _rule = picked
        group = [x for x in self.items if x.kind == "rule" and x.file == e.file
                 and (x.action == "deny") == (e.action == "deny")]
        j = group.index(e) + delta
        if not e.file or not e.line or not 0 <= j < len(group):
            self._say("it can't move further within its file", error=True)
            return
        other = group[j]
        self._edit(lambda edit: edit.swap(Path(e.file), e.line, other.line),
                   f"rule moved {'up' if delta < 0 else 'down'} in {e.where.split(':')[0]}")
        options = self.query_one(OptionList)
        if options.highlighted is not None:
            options.highlighted = max(0, min(len(self.items) - 1, options.highlighted + delta))

    def _edit(self, change: Callable[[ModuleType], None], done: str) -> None:
        from tuiapp.settings import rule_edit

        try:
            change(rule_edit)
        except (rule_edit.EditError, OSError, UnicodeDecodeError) as err:
            self._say(f"not changed: {err}", error=True)
            return
        self._reload()
        self._say(done)
        self.fill()

    def _disarm(self) -> None:
        self._armed = None
