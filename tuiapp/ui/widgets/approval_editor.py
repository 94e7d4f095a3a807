"""Editing a pending call's arguments (the approval panel's `e`): the editor and the check
of what was typed (JSON first, then the tool's schema)."""

from __future__ import annotations

import json

from textual import events
from textual.message import Message
from textual.widgets import TextArea

from tuiapp.tools.schema import arguments_error


class ArgsEditor(TextArea):
    """The arguments editor. Esc goes back to the call (TextArea's own Esc would move the
    keyboard to the next widget and leave the panel in edit mode)."""

    class Back(Message):
        pass

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "escape":
            event.stop()
            event.prevent_default()  # before TextArea's handler
            self.post_message(self.Back())


def parse_arguments(text: str, parameters: dict[str, object]) -> tuple[str | None, dict]:
    """Edited arguments → (problem, value). JSON first, then the tool's schema."""
    try:
        value = json.loads(text)
    except RecursionError:
        return "nested too deeply", {}
    except json.JSONDecodeError as e:
        return f"not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})", {}
    if not isinstance(value, dict):
        return f"arguments must be a JSON object, not {type(value).__name__}", {}
    problem = arguments_error(parameters, value)  # type: ignore[arg-type]
    return (f"does not match the tool's schema: {problem}" if problem else None), value
