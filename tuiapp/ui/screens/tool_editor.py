"""The in-app editor for a tool's source, for when neither $VISUAL nor $EDITOR is set.

A code TextArea with syntax highlighting (from the file's suffix or #! line); ctrl+s saves
(atomically, keeping the file's mode, so the exec bit stays), escape closes. The screen is
dismissed with True when something was saved, so the app can reload the tool.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Static, TextArea

from tuiapp.ui.literal import literal, say

MAX_EDIT_BYTES = 2 * 1024 * 1024  # a tool source bigger than this is not a text to edit here
LANGS = {".py": "python", ".sh": "bash", ".js": "javascript", ".ts": "javascript",
         ".json": "json", ".toml": "toml", ".yaml": "yaml"}


def language_of(path: Path, text: str) -> str | None:
    if path.suffix in LANGS:
        return LANGS[path.suffix]
    first = text.split("\n", 1)[0]
    if first.startswith("#!"):
        if "python" in first:
            return "python"
        if "sh" in first:
            return "bash"
        if "node" in first:
            return "javascript"
    return None


def save_text(path: Path, text: str) -> None:
    """Write through a temp file in the same dir and rename: never a half-written tool.
    A symlinked tool is saved into the file it points to (the code that runs), the link kept."""
    path = Path(os.path.realpath(path))
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".kep-save")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class ToolSaved(Message):
    """A save in the in-app editor: the app reloads the tool right away."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path


class ToolEditor(ModalScreen[bool]):
    DEFAULT_CSS = """
    ToolEditor { align: center middle; }
    ToolEditor > #editor-title { dock: top; height: 1; padding: 0 1; background: $panel; }
    ToolEditor > #editor-status { dock: bottom; height: 1; padding: 0 1; color: $text-muted; }
    ToolEditor > TextArea { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "save", priority=True, id="editor_save"),
        Binding("escape", "close", "close", priority=True, id="editor_close"),
    ]

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.saved = False
        self.error: str | None = None
        self.text = ""
        from tuiapp.security import project_files  # a FIFO or /dev/zero link: one line

        try:
            self.text = project_files.read_text(path, MAX_EDIT_BYTES, missing_ok=False) or ""
        except project_files.ProjectFileError as e:
            why = ("is over 2 MiB" if e.reason.startswith("too big") else
                   "is not UTF-8 text" if "UTF-8" in e.reason else e.reason)
            self.error = f"{path.name} {why}: open it in an editor ($EDITOR)"

    def compose(self) -> ComposeResult:
        yield Static(say("Editing {}", self.path), id="editor-title")
        area = TextArea.code_editor(self.text, language=language_of(self.path, self.text),
                                    id="editor-text", read_only=self.error is not None)
        yield area
        yield Static(literal(self.error) if self.error else "ctrl+s save · escape close",
                     id="editor-status", markup=False)

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def action_save(self) -> None:
        if self.error is not None and not self.saved:
            return
        try:
            save_text(self.path, self.query_one(TextArea).text)
        except OSError as e:
            self.query_one("#editor-status", Static).update(say("not saved: {}", e.strerror or e))
            return
        self.saved = True
        self.query_one("#editor-status", Static).update(say("saved {}", self.path.name))
        self.app.post_message(ToolSaved(self.path))

    def action_close(self) -> None:
        self.dismiss(self.saved)
