"""An MCP server asks the user for input (elicitation/create).

Form mode: a form built from the requested schema (the workbench's SchemaForm), with
accept (ctrl+s), decline (ctrl+d) and cancel (escape). URL mode: the URL is shown and opened
in the browser only on a key (o); kep never follows it by itself. Everything the server sent
is foreign text: shown through the display edge.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from tuiapp.mcp.peer import ElicitationAnswer, ElicitationRequest
from tuiapp.ui.literal import literal, say
from tuiapp.ui.widgets.schema_form import SchemaForm

MESSAGE_LIMIT = 4000  # characters of the server's message shown


def open_in_browser(url: str) -> str | None:
    """Hand `url` to the desktop's opener (the user pressed the key); None, or why not."""
    from tuiapp.security.sandbox.spawn import popen_unconfined

    opener = shutil.which("open" if sys.platform == "darwin" else "xdg-open")
    if opener is None:
        return "no browser opener (xdg-open) found: copy the URL instead"
    try:
        popen_unconfined([opener, url], "browser", stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    except OSError as e:
        return f"could not open the browser: {e}"
    return None


class ElicitationScreen(ModalScreen[ElicitationAnswer]):
    DEFAULT_CSS = """
    ElicitationScreen { align: center middle; }
    ElicitationScreen > VerticalScroll { width: 90%; max-width: 100; height: auto;
        max-height: 90%; border: round $accent; padding: 0 1; background: $surface; }
    ElicitationScreen #elicit-buttons { height: auto; margin-top: 1; }
    ElicitationScreen #elicit-problem { color: $error; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "answer('cancel')", "cancel", id="elicit_cancel"),
        Binding("ctrl+s", "answer('accept')", "accept", id="elicit_accept"),
        Binding("ctrl+d", "answer('decline')", "decline", id="elicit_decline"),
        Binding("o", "open_url", "open the URL", show=False, id="elicit_open_url"),
    ]

    def __init__(self, request: ElicitationRequest) -> None:
        super().__init__()
        self.request = request
        self.opened = False

    def compose(self) -> ComposeResult:
        r = self.request
        with VerticalScroll():
            yield Label(say("MCP server {} asks for input", r.server), id="elicit-title")
            yield Static(literal(r.message, limit=MESSAGE_LIMIT), id="elicit-message")
            if r.mode == "url":
                yield Static(say("URL: {}", r.url), id="elicit-url")
                yield Label("o: open it in the browser · ctrl+s: done · ctrl+d: decline · "
                            "esc: cancel")
            else:
                yield SchemaForm(r.schema, id="elicit-form")
                yield Label("", id="elicit-problem")
            with Horizontal(id="elicit-buttons"):
                if r.mode == "url":
                    yield Button("Open URL (o)", id="open")
                yield Button("Accept (ctrl+s)", id="accept", variant="primary")
                yield Button("Decline (ctrl+d)", id="decline")
                yield Button("Cancel (esc)", id="cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "open":
            self.action_open_url()
        elif event.button.id in ("accept", "decline", "cancel"):
            self.action_answer(event.button.id)

    def action_open_url(self) -> None:
        if self.request.mode != "url":
            return
        url = self.request.url
        if not url.lower().startswith(("https://", "http://")):
            self.notify("kep opens only http(s) URLs", severity="warning")
            return
        problem = open_in_browser(url)
        if problem:
            self.notify(problem, severity="error", markup=False)
            return
        self.opened = True

    def action_answer(self, action: str) -> None:
        if action != "accept" or self.request.mode == "url":
            self.dismiss(ElicitationAnswer(action))  # type: ignore[arg-type]
            return
        content, problem = self.query_one(SchemaForm).read()
        if problem:
            self.query_one("#elicit-problem", Label).update(literal(problem, line=True))
            return
        self.dismiss(ElicitationAnswer("accept", content))
