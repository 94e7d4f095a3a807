"""A small modal form asking for a prompt's or agent's variables before the session starts.

One input per variable, pre-filled with its default (from `.prompt {"params": …}` or the
agent's index.yaml) or the value given with `--set`. Required ones must not be empty. Enter
moves on and submits from the last field; Esc cancels (the result is None).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from tuiapp.project.session_start import VariableField
from tuiapp.ui.focus import focus_now


class VariablesForm(ModalScreen[dict[str, str] | None]):
    DEFAULT_CSS = """
    VariablesForm {
        align: center middle;
    }
    VariablesForm > #form {
        width: 72;
        max-width: 95%;
        height: auto;
        max-height: 90%;
        padding: 1 2;
        border: thick $accent 60%;
        background: $surface;
    }
    VariablesForm #form-title {
        text-style: bold;
        margin-bottom: 1;
    }
    VariablesForm .field-label {
        margin-top: 1;
    }
    VariablesForm .field-error {
        color: $text-error;
        height: auto;
    }
    VariablesForm #fields {
        height: auto;
        max-height: 24;
    }
    VariablesForm #form-buttons {
        height: auto;
        margin-top: 1;
        align-horizontal: right;
    }
    VariablesForm #form-buttons Button {
        margin-left: 2;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "cancel", show=False, id="form_cancel")]

    def __init__(self, title: str, fields: Sequence[VariableField]) -> None:
        super().__init__()
        self.form_title = title
        self.fields = list(fields)

    def compose(self) -> ComposeResult:
        with Vertical(id="form"):
            yield Static(Content(self.form_title), id="form-title")
            with VerticalScroll(id="fields"):
                for i, f in enumerate(self.fields):
                    mark = ("  required", "$text-warning") if f.required else ("", "")
                    yield Label(Content.assemble((f.name, "bold"), mark,
                                                 (f"  {f.description}" if f.description else "",
                                                  "$text-muted")), classes="field-label")
                    value = f.value if f.value is not None else (f.default or "")
                    yield Input(value, placeholder=f.description or f.name, id=f"var-{i}",
                                compact=True)
            yield Static("", id="form-error", classes="field-error")
            with Horizontal(id="form-buttons"):
                yield Button("Cancel  esc", id="form-cancel", compact=True)
                yield Button("Start  enter", id="form-start", variant="primary", compact=True)

    def on_mount(self) -> None:
        inputs = list(self.query(Input))
        if inputs:
            # Start on the first field that still needs a value.
            empty = next((i for i in inputs if not i.value), inputs[0])
            focus_now(empty)

    def values(self) -> dict[str, str]:
        return {f.name: self.query_one(f"#var-{i}", Input).value
                for i, f in enumerate(self.fields)}

    def missing(self) -> list[str]:
        return [f.name for f, v in zip(self.fields, self.values().values(), strict=True)
                if f.required and not v.strip()]

    def submit(self) -> None:
        missing = self.missing()
        if missing:
            self.query_one("#form-error", Static).update(
                Content(f"Needed: {', '.join(missing)}"))
            index = next(i for i, f in enumerate(self.fields) if f.name == missing[0])
            focus_now(self.query_one(f"#var-{index}", Input))
            return
        self.dismiss(self.values())

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        inputs = list(self.query(Input))
        index = inputs.index(event.input)
        if index + 1 < len(inputs):
            focus_now(inputs[index + 1])
        else:
            self.submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "form-start":
            self.submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
