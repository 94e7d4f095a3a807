"""ChatScreen: kep's one screen, where the prompt keeps the keyboard. Typing that nothing
focused can use goes to the prompt, and the prompt has the keyboard again after an overlay."""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.screen import Screen
from textual.widgets import Input, TextArea

from tuiapp.ui.narrow import BREAKPOINTS
from tuiapp.ui.widgets.prompt_input import PromptInput


class ChatScreen(Screen[None]):
    # Focus starts in the prompt. Textual's default ("*") would focus the transcript first and
    # then move: two restyles of the whole transcript before the first frame.
    AUTO_FOCUS = "#prompt"
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = BREAKPOINTS  # ui/narrow.py

    def on_key(self, event: events.Key) -> None:
        """A printable key that nothing focused can use goes to the prompt: typing is never
        lost on a pane, the transcript or a button. Keys some widget or the app binds (an
        approval's y, a pane's c) keep their meaning."""
        focused = self.focused
        if (event.character is None or not event.is_printable or focused is None
                or isinstance(focused, TextArea | Input)):
            return
        if any(event.key in bindings.key_to_bindings
               for _node, bindings in self._modal_binding_chain):
            return
        prompt = self.query_one(PromptInput)
        prompt.focus()
        prompt.insert(event.character)
        event.stop()
        event.prevent_default()

    def on_screen_resume(self) -> None:
        """Back from an overlay (viewer, picker, palette): the prompt has the keyboard again,
        unless an approval is waiting for an answer."""
        approval = self.query("#approval")
        if not (approval and approval.first().display and approval.first().has_focus_within):
            self.query_one(PromptInput).focus()

