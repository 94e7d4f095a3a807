"""ChatScreen: kep's one screen, where the prompt keeps the keyboard. Typing that nothing
focused can use goes to the prompt, and the prompt has the keyboard again after an overlay.
The workbench's keys work wherever it is open; the footer names who gets the next key."""

from __future__ import annotations

import time
from typing import ClassVar

from textual import events
from textual.actions import SkipAction
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, TextArea

from tuiapp.ui import keys
from tuiapp.ui.focus import GUARD_SECONDS, focus_name, focus_now
from tuiapp.ui.literal import literal
from tuiapp.ui.narrow import BREAKPOINTS
from tuiapp.ui.widgets.prompt_input import PromptInput

# The workbench's keys: (key, action of Workbench, description). Bound here, not on the
# workbench, so they work wherever the keyboard is while it is open.
BENCH_KEYS = (("f5", "run", "run the tool with the form's arguments", "bench_run"),
              ("ctrl+enter", "run", "run (where the terminal reports it)", "bench_run_alt"),
              ("f2", "cancel", "cancel the run", "bench_cancel"),
              ("f4", "edit", "edit the tool's source", "bench_edit"),
              ("f6", "toggle_run_on_save", "run again on every save", "bench_run_on_save"),
              ("f7", "send", "send the last run to the chat", "bench_send"),
              ("f8", "diff", "diff the last two runs", "bench_diff"),
              ("f9", "rerun", "re-run a past run", "bench_rerun"),
              ("f3", "close", "close the workbench", "bench_close"))


class ChatScreen(Screen[None]):
    # Focus starts in the prompt. Textual's default ("*") would focus the transcript first and
    # then move: two restyles of the whole transcript before the first frame.
    AUTO_FOCUS = "#prompt"
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = BREAKPOINTS  # ui/narrow.py
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(key, f"bench('{action}')", description, show=False, priority=True, id=name)
        for key, action, description, name in BENCH_KEYS]

    focused_at = 0.0  # when the keyboard last moved (time.monotonic)

    def on_mount(self) -> None:
        """The user's `[keys]` (ui/keys.py), checked once: a problem is one line each."""
        config = getattr(getattr(self.app, "ws", None), "config", None)
        for line in keys.apply(config.keys if config is not None else {}):
            self.app.notify(literal(line), title="Keys", severity="warning", timeout=12)
        self.app.set_keymap(keys.changed())

    def set_focus(self, widget: Widget | None, scroll_visible: bool = True,
                  from_app_focus: bool = False) -> None:
        before = self.focused
        super().set_focus(widget, scroll_visible, from_app_focus)
        if self.focused is not before:
            self.focused_at = time.monotonic()
            self.show_keyboard()

    def show_keyboard(self) -> None:
        """The footer names the widget that gets the next key."""
        footers = self.query("#status")
        if footers:
            footers.first().keyboard = focus_name(self.focused)  # type: ignore[attr-defined]

    def action_bench(self, action: str) -> None:
        bench = self.query("#workbench")
        if not bench:
            raise SkipAction()  # no workbench: the key means what it means elsewhere
        getattr(bench.first(), f"action_{action}")()

    def action_mcp_resources(self) -> None:
        """`r` in the functions panel: the MCP servers' resources, to attach or subscribe to."""
        from tuiapp.ui.screens.resources import open_screen

        open_screen(self.app)  # type: ignore[arg-type]

    def on_key(self, event: events.Key) -> None:
        """A printable key that nothing focused can use goes to the prompt: typing is never
        lost on a pane, the transcript or a button. A widget's own letter keys (a pane's c)
        keep their meaning once it has had the keyboard for GUARD_SECONDS; a letter sooner
        than that was typed before the focus change was seen, and is typing too."""
        focused = self.focused
        if (event.character is None or not event.is_printable or focused is None
                or isinstance(focused, TextArea | Input)):
            return
        app = self.app
        bound = [node for node, bindings in self._modal_binding_chain
                 if event.key in bindings.key_to_bindings]
        if bound and (event.key == "slash"  # starts a filter: moves the keyboard, eats nothing
                      or any(node is app or node is self for node in bound)
                      or time.monotonic() - self.focused_at >= GUARD_SECONDS):
            return
        prompt = self.query_one(PromptInput)
        focus_now(prompt)
        prompt.insert(event.character)
        event.stop()
        event.prevent_default()

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        """The first "/" typed at the start of the prompt brings in the slash-command list
        (ui/slash/menu.py): built then, not before the first frame."""
        prompt = event.text_area
        if (isinstance(prompt, PromptInput) and prompt.completer is None
                and prompt.text.startswith("/") and prompt.parent is not None):
            from tuiapp.ui.slash.menu import SlashMenu

            menu = prompt.completer = SlashMenu()
            prompt.parent.mount(menu, before=prompt)
            self.call_after_refresh(lambda: menu.follow(prompt.text))

    def on_prompt_input_edit_requested(self, message: PromptInput.EditRequested) -> None:
        from tuiapp.ui.prompt_editor import edit_prompt

        edit_prompt(self.app, self.query_one(PromptInput))

    def on_screen_resume(self) -> None:
        """Back from an overlay (viewer, picker, palette): the prompt has the keyboard again,
        unless an approval is waiting for an answer."""
        approval = self.query("#approval")
        if not (approval and approval.first().display and approval.first().has_focus_within):
            focus_now(self.query_one(PromptInput))
