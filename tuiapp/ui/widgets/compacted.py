"""The "compacted" marker: where a summary replaced the conversation above it in the model's
context. What came before stays on screen, dimmed (and in the session store)."""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from tuiapp.security.display import printable
from tuiapp.vocab.messages import Message


class CompactedMarker(Static):
    DEFAULT_CSS = """
    CompactedMarker { margin: 1 0; padding: 0 1; color: $text-muted;
                      border-top: dashed $accent; border-bottom: dashed $accent; }
    """

    def __init__(self, message: Message) -> None:
        summary = printable(message.content.split("\n\n", 1)[-1])
        super().__init__(Content.assemble(
            ("compacted", "bold $accent"),
            ": the model now sees this summary instead of what is above\n", summary))
        self.summary = summary


def dim_above(widgets: Widget | list[Widget], since: int = 0) -> None:
    """Dim the widgets of messages a summary replaced: everything already in a container, or
    a list's widgets from `since` on."""
    children = list(widgets.children) if isinstance(widgets, Widget) else widgets[since:]
    for child in children:
        if not isinstance(child, CompactedMarker):
            child.add_class("-compacted")
            child.styles.text_opacity = 0.55
