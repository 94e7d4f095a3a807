"""The end of a session with session grants (issue 25 item 10): each grant listed, none kept
unless the user ticks it; the ticked ones are written to kep.toml as rules."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, SelectionList, Static
from textual.widgets.selection_list import Selection

from tuiapp.security.display import printable_line
from tuiapp.security.grants import Grant


class GrantsReview(ModalScreen[list[Grant]]):
    """Dismissed with the grants to keep as rules (an empty list: keep none)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "none", "quit, keep none", id="grants_none"),
    ]
    DEFAULT_CSS = """
    GrantsReview { align: center middle; }
    GrantsReview > Vertical { width: 90%; max-width: 110; height: auto; max-height: 90%;
                              border: round $warning; padding: 0 1; background: $surface; }
    GrantsReview SelectionList { height: auto; max-height: 16; }
    GrantsReview Horizontal { height: auto; }
    """

    def __init__(self, grants: list[Grant]) -> None:
        super().__init__()
        self.grants = grants

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Content.styled(
                "This session's grants end now. Tick any to keep as rules in kep.toml "
                "(space ticks; none are kept unless ticked).", "bold"))
            yield SelectionList[int](*(
                Selection(Content(printable_line(f"{g.rule.action} {g.label}  (from {g.call})")),
                          i, False) for i, g in enumerate(self.grants)))
            with Horizontal():
                yield Button("Keep ticked and quit", id="keep", variant="warning", compact=True)
                yield Button("Quit, keep none (esc)", id="none", compact=True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "keep":
            chosen = self.query_one(SelectionList).selected
            self.dismiss([self.grants[i] for i in chosen])
        else:
            self.action_none()

    def action_none(self) -> None:
        self.dismiss([])
