"""A `.prompt` file's `.print` output in the transcript. Its own module: Markdown brings
markdown-it, which the first frame does not need."""

from __future__ import annotations

from textual.widgets import Markdown


class PrintedText(Markdown):
    """A `.print` statement's text, shown as the prompt's output."""

    DEFAULT_CSS = """
    PrintedText {
        margin: 0 1 1 1;
        padding: 0 1;
        border-left: thick $success 60%;
    }
    """
