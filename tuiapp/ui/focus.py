"""Focus that never swallows a key.

Textual's `Widget.focus()` moves the keyboard later (it queues the change behind the events
already waiting), so keys typed in one burst after a focus change still reach the widget
that had the keyboard: `slow` typed on a tool pane lost its `o` to the pane's "open output"
key. kep moves focus with `focus_now`, which takes effect before the next key is read, and
a widget's own single-letter keys wait GUARD_SECONDS after it got the keyboard (until then
a letter is typing, and goes to the message box).
"""

from __future__ import annotations

from textual.widget import Widget

GUARD_SECONDS = 0.5  # letters this soon after a focus change were typed before it was seen


def focus_now(widget: Widget) -> None:
    """Give `widget` the keyboard before the next key is handled. A widget that cannot take
    it now (not mounted, hidden) gets it as soon as it can, as Textual's focus() does."""
    try:
        screen = widget.screen
    except Exception:  # not mounted yet (NoScreen)
        widget.focus()
        return
    if widget.is_attached and widget.focusable and screen is widget.app.screen:
        screen.set_focus(widget)
    else:
        widget.focus()


# By id, nearest first: what the footer calls the part of the screen that has the keyboard.
NAMES = {"prompt": "message box", "functions-filter": "functions filter",
         "functions": "functions", "approval": "approval", "panes": "tool panes",
         "transcript": "transcript", "workbench": "workbench"}


def focus_name(widget: Widget | None) -> str:
    """What the footer calls the widget that gets the next key."""
    node: Widget | None = widget
    while node is not None:
        if node.id in NAMES:
            return NAMES[node.id]
        parent = node.parent
        node = parent if isinstance(parent, Widget) else None
    return "nothing" if widget is None else type(widget).__name__.lower()
