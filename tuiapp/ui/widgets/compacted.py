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


def dim_above(container: Widget) -> None:
    """Dim everything already in `container` (the messages the summary replaced)."""
    for child in container.children:
        if not isinstance(child, CompactedMarker):
            child.add_class("-compacted")
            child.styles.text_opacity = 0.55
