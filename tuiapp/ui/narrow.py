"""The side panels by terminal width. Below NARROW_BELOW columns the tool panes and the
functions panel would squeeze the chat to nothing (at 40 columns a widget got no width at
all, and Textual crashed wrapping its text): there they are overlays over the chat (styled in
later.tcss for ChatScreen.-narrow), folded away until their key opens them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events
from textual.app import App

if TYPE_CHECKING:
    from tuiapp.ui.widgets.functions_panel import FunctionsPanel
    from tuiapp.ui.widgets.tool_panes import ToolPanes

NARROW_BELOW = 100  # columns
CHAT_MIN = 60  # columns the chat keeps while side panels are open (they fold first)
BREAKPOINTS = [(0, "-narrow"), (NARROW_BELOW, "-wide")]  # the screen's classes by width


class NarrowLayout(App[int]):
    """KepApp's part: folds the panels away when the terminal gets narrow, and brings back
    the ones that were open when it is wide again."""

    panes: ToolPanes
    functions: FunctionsPanel
    narrow = False
    _wide_panels = (False, False)  # panes, functions: shown when it was last wide

    def fit_panels(self) -> None:
        """Wide, but the open panels would leave the chat under CHAT_MIN columns (functions,
        panes and workbench at 120): they fold into overlays, as on a narrow terminal
        (ChatScreen.-crowded, styled with -narrow in later.tcss)."""
        screen = self.screen
        width = self.size.width
        if screen.id != "_default":  # the chat screen (KepApp.get_default_screen)
            return
        crowded = False
        if not self.narrow:
            side = 0
            if self.functions.is_mounted and not self.functions.has_class("-hidden"):
                side += min(38, int(width * 0.4)) + 1
            if self.panes.is_mounted and not self.panes.has_class("-hidden"):
                side += max(36, int(width * 0.4)) + 1
            shares = 2 if screen.query("#workbench") else 1  # the workbench is 1fr too
            crowded = (width - side) // shares < CHAT_MIN
        screen.set_class(crowded, "-crowded")

    def on_resize(self, event: events.Resize) -> None:
        narrow = event.size.width < NARROW_BELOW
        self.call_after_refresh(self.fit_panels)
        if narrow == self.narrow:
            return
        self.narrow = narrow
        panes, functions = self.panes, self.functions
        if narrow:
            self._wide_panels = (not panes.has_class("-hidden"),
                                 not functions.has_class("-hidden"))
            panes.add_class("-hidden")
            functions.add_class("-hidden")
        else:
            panes.set_class(not self._wide_panels[0], "-hidden")
            functions.set_class(not self._wide_panels[1], "-hidden")
