"""The palette's "New function": ask for a name, write the keprompt Python template.

A bad name gets its one-line reason under the box and nothing is written; the modal is
dismissed with the new file's path.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from tuiapp.tools.templates import TemplateError, create
from tuiapp.ui.literal import literal, say


class NewFunction(ModalScreen[Path | None]):
    DEFAULT_CSS = """
    NewFunction { align: center middle; }
    NewFunction > Vertical { width: 60; height: auto; border: round $primary; padding: 0 1;
                             background: $surface; }
    NewFunction #new-error { color: $text-error; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "cancel", id="new_function_cancel")]

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("New function (keprompt, Python): its name", markup=False)
            yield Input(placeholder="e.g. word_count", id="new-name")
            yield Static("", id="new-error", markup=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            made = create(self.root, event.value, "keprompt", "python")
        except TemplateError as e:
            self.query_one("#new-error", Static).update(literal(e))
            return
        except OSError as e:
            self.query_one("#new-error", Static).update(say("cannot write: {}", e.strerror or e))
            return
        self.dismiss(made.path)

    def action_cancel(self) -> None:
        self.dismiss(None)
