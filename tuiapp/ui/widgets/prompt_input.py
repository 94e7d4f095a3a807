"""The prompt: a multi-line TextArea where Enter sends and Up/Down recall earlier prompts.

Enter sends; Shift+Enter or Ctrl+J adds a new line (terminals without the kitty keyboard
protocol report Shift+Enter as Enter, so Ctrl+J is the one that always works). Up on the first
visual line and Down on the last walk the history, shell-style: what was being typed is kept
as the newest entry and comes back after the last Down. Esc posts Interrupt.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, Protocol

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea

from tuiapp.ui import keys

HISTORY_LIMIT = 500


class Completer(Protocol):
    """A list that follows what is typed (the slash-command list, ui/slash/menu.py, which
    the chat screen attaches on the first "/"): it may take keys while it is open."""

    @property
    def is_open(self) -> bool: ...
    def follow(self, text: str) -> None: ...
    def take_key(self, key: str, prompt: PromptInput) -> bool: ...


class PromptHistory:
    """Earlier prompts, oldest first, and a cursor walking them."""

    def __init__(self, entries: Iterable[str] = ()) -> None:
        self.entries: list[str] = []
        for e in entries:
            self.add(e)
        self._index: int | None = None  # None: not browsing
        self._draft = ""

    def add(self, text: str) -> None:
        text = text.strip()
        if text and (not self.entries or self.entries[-1] != text):
            self.entries.append(text)
            del self.entries[:-HISTORY_LIMIT]
        self._index = None

    @property
    def browsing(self) -> bool:
        return self._index is not None

    def older(self, current: str) -> str | None:
        if not self.entries:
            return None
        if self._index is None:
            self._draft, self._index = current, len(self.entries)
        if self._index == 0:
            return None
        self._index -= 1
        return self.entries[self._index]

    def newer(self) -> str | None:
        if self._index is None:
            return None
        self._index += 1
        if self._index >= len(self.entries):
            self._index = None
            return self._draft
        return self.entries[self._index]


class PromptInput(TextArea):
    """Where the user types. Posts Submitted on Enter; the app decides what to do with it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "interrupt", "interrupt", show=False, id="interrupt"),
    ]

    class Interrupt(Message):
        """Esc in the prompt: the app interrupts the reply (or running tools), or, when idle,
        puts away what is shown above the prompt (first-run panel, starters)."""

    class EditRequested(Message):
        """The external-editor keys (`ctrl+x ctrl+e`): the screen opens $VISUAL / $EDITOR."""

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, history: Iterable[str] = (), **kwargs: object) -> None:
        super().__init__(
            soft_wrap=True,
            show_line_numbers=False,
            highlight_cursor_line=False,
            placeholder="Message kep…   enter send · ctrl+j new line · ↑ history",
            **kwargs,  # type: ignore[arg-type]
        )
        self.prompt_history = PromptHistory(history)
        self.completer: Completer | None = None
        self._chord: str | None = None  # the first key of the external-editor sequence

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if event.text_area is self and self.completer is not None:
            # A recalled "/command" opens no list: ↑ and ↓ keep walking the history.
            self.completer.follow("" if self.prompt_history.browsing else self.text)

    async def _on_key(self, event: events.Key) -> None:
        # Runs before TextArea's own handler (which would insert "\n" for Enter).
        menu = self.completer
        if await self._editor_keys(event.key) or (
                menu is not None and menu.is_open and menu.take_key(event.key, self)):
            event.stop()
            event.prevent_default()
            return
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self._submit()
        elif event.key in ("shift+enter", "ctrl+j", "newline"):
            event.stop()
            event.prevent_default()
            self.insert("\n")

    async def _editor_keys(self, key: str) -> bool:
        """The external-editor sequence ([keys] external_editor); a first key followed by
        something else does what it does alone (ctrl+x: cut) and the second key goes on."""
        sequence = keys.key("external_editor").split(" ")
        if self._chord is not None:
            first, self._chord = self._chord, None
            if key == sequence[-1]:
                self.post_message(self.EditRequested())
                return True
            for binding in self._bindings.key_to_bindings.get(first, [])[:1]:
                await self.run_action(binding.action)
            return False
        if key == sequence[0]:
            if len(sequence) == 1:
                self.post_message(self.EditRequested())
            else:
                self._chord = key
            return True
        return False

    def action_interrupt(self) -> None:
        self.post_message(self.Interrupt())

    def _submit(self) -> None:
        text = self.text
        if not text.strip():
            return
        self.prompt_history.add(text)
        self.clear()
        self.post_message(self.Submitted(text))

    def action_cursor_up(self, select: bool = False) -> None:
        if not select and self.navigator.is_first_wrapped_line(self.cursor_location):
            entry = self.prompt_history.older(self.text)
            if entry is not None:
                self._show(entry, at_end=False)
            return
        super().action_cursor_up(select)

    def action_cursor_down(self, select: bool = False) -> None:
        if not select and self.navigator.is_last_wrapped_line(self.cursor_location):
            entry = self.prompt_history.newer()
            if entry is not None:
                self._show(entry, at_end=True)
            return
        super().action_cursor_down(select)

    def _show(self, text: str, *, at_end: bool) -> None:
        self.load_text(text)
        # Going back in time lands on the first line, so another Up goes further back.
        self.move_cursor(self.document.end if at_end else (0, len(text.split("\n", 1)[0])))
