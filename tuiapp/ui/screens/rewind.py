"""Rewind (issue 28 item 5): pick one of your earlier messages, then rewind the conversation
to just before it (a new session forked from there: the original is kept), restore the files
kep's built-ins wrote since then, or both. Files other tools changed are not restored, and the
screen says so."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, OptionList, Static
from textual.widgets.option_list import Option

from tuiapp.conversation.checkpoints import NOT_RESTORED
from tuiapp.security.display import printable_line
from tuiapp.ui.literal import literal

CHOICES = (("conversation", "Rewind the conversation"), ("files", "Restore the files"),
           ("both", "Both"), ("cancel", "Cancel"))
PREVIEW = 120  # characters of each message in the list


class RewindScreen(ModalScreen[tuple[int, str] | None]):
    """Dismissed with (index of the picked user message, choice) or None."""

    DEFAULT_CSS = """
    RewindScreen { align: center middle; }
    RewindScreen > Vertical { width: 90%; max-width: 100; height: auto; max-height: 90%;
                              border: round $accent; padding: 0 1; background: $surface; }
    RewindScreen OptionList { height: auto; max-height: 12; }
    RewindScreen .rewind-note { color: $text-muted; }
    RewindScreen Horizontal { height: auto; }
    RewindScreen Button { min-width: 0; margin: 0 1 0 0; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "cancel")]

    def __init__(self, messages: list[str]) -> None:
        super().__init__()
        self.messages = messages
        self.picked: int | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Content.styled("Rewind to one of your messages", "bold"))
            yield OptionList(*[Option(self._line(i, m), id=f"m{i}")
                               for i, m in enumerate(self.messages)])
            yield Static(Content(
                "Rewinding starts a new session from just before that message; the original "
                f"session is kept (delete it from the session list). Only files kep's built-ins "
                f"wrote are restored: {NOT_RESTORED}."), classes="rewind-note")
            with Horizontal():
                for name, label in CHOICES:
                    yield Button(literal(label), name=name, id=f"rewind-{name}", compact=True,
                                 disabled=name != "cancel")

    @staticmethod
    def _line(i: int, text: str) -> Content:
        one = printable_line(text)
        one = one if len(one) <= PREVIEW else one[:PREVIEW - 1] + "…"
        return Content.assemble((f"{i + 1}. ", "dim"), one)

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        if self.messages:
            options.highlighted = len(self.messages) - 1
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.picked = event.option_index
        for button in self.query(Button):
            button.disabled = False
        self.query_one("#rewind-conversation", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        name = event.button.name or "cancel"
        if name == "cancel" or self.picked is None:
            self.dismiss(None)
        else:
            self.dismiss((self.picked, name))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
