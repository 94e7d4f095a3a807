"""The session picker (ctrl+o): this project's sessions, newest first. Enter opens one, r
renames it, d then d again deletes it (with its tool output), Esc closes. A filter box
narrows the list by title or id."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from tuiapp.conversation import session_admin
from tuiapp.conversation.store import SessionInfo, Store, UnknownSession
from tuiapp.ui.literal import literal, say

CONFIRM_SECONDS = 3.0


@dataclass(frozen=True)
class Picked:
    """What the picker answers: a session to open, or None (closed)."""

    session_id: str


class SessionPicker(ModalScreen[Picked | None]):
    DEFAULT_CSS = """
    SessionPicker { align: center middle; }
    SessionPicker > Vertical {
        width: 90%; max-width: 110; height: 80%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    SessionPicker Input { margin-bottom: 1; }
    SessionPicker OptionList { height: 1fr; border: none; }
    SessionPicker .picker--hint { color: $text-muted; height: auto; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="sessions_close"),
        Binding("ctrl+r,f2", "rename", "Rename", id="sessions_rename"),
        # Priority: the filter box would take ctrl+d as "delete the next character".
        Binding("ctrl+d", "delete", "Delete", priority=True, id="sessions_delete"),
    ]

    def __init__(self, store: Store, sessions: list[SessionInfo], current: str | None) -> None:
        super().__init__()
        self.store = store
        self.sessions = sessions
        self.current = current
        self._armed: str | None = None  # the session a first delete key pointed at
        self._renaming: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Sessions of this project"
            yield Input(placeholder="Filter by title or id…", id="picker-filter")
            yield OptionList(id="picker-list")
            yield Static(self._hint(), classes="picker--hint")

    def on_mount(self) -> None:
        self._fill("")
        self.query_one(Input).focus()

    @staticmethod
    def _hint() -> Content:
        return Content.assemble(
            ("enter", "bold"), " open  ", ("ctrl+r", "bold"), " rename  ",
            ("ctrl+d", "bold"), " delete (press twice)  ", ("esc", "bold"), " close")

    def _fill(self, text: str) -> None:
        needle = text.strip().lower()
        options = self.query_one(OptionList)
        options.clear_options()
        for s in self.sessions:
            title = s.title or "(no message)"
            if needle and needle not in title.lower() and not s.id.startswith(needle):
                continue
            when = f"{datetime.fromtimestamp(s.updated):%Y-%m-%d %H:%M}"
            mark = "  (open now)" if s.id == self.current else ""
            label = Content.assemble(
                (s.id, "bold"), "  ", Content(title), (mark, "$text-accent"), "\n",
                (f"{when} · {s.model} · {s.message_count} messages", "$text-muted"))
            options.add_option(Option(label, id=s.id))
        if options.option_count:
            options.highlighted = 0

    def _selected(self) -> str | None:
        options = self.query_one(OptionList)
        if options.highlighted is None or not options.option_count:
            return None
        return options.get_option_at_index(options.highlighted).id

    @on(Input.Changed, "#picker-filter")
    def _filter(self, event: Input.Changed) -> None:
        if self._renaming is None:
            self._fill(event.value)

    @on(Input.Submitted, "#picker-filter")
    def _submit(self, event: Input.Submitted) -> None:
        if self._renaming is not None:
            self._finish_rename(event.value)
        elif (sid := self._selected()) is not None:
            self.dismiss(Picked(sid))

    @on(OptionList.OptionSelected)
    def _open(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.dismiss(Picked(event.option.id))

    def on_key(self, event: events.Key) -> None:
        # Up/down in the filter box move through the list (the box keeps the keyboard).
        if event.key in ("up", "down") and self._renaming is None:
            options = self.query_one(OptionList)
            if event.key == "up":
                options.action_cursor_up()
            else:
                options.action_cursor_down()
            event.stop()

    def action_close(self) -> None:
        if self._renaming is not None:
            self._end_rename()
        else:
            self.dismiss(None)

    def action_rename(self) -> None:
        sid = self._selected()
        if sid is None:
            return
        self._renaming = sid
        box = self.query_one(Input)
        box.placeholder = f"New title for {sid}; enter saves, esc goes back"
        title = next((s.title for s in self.sessions if s.id == sid), "")
        box.value = title
        box.focus()

    def _finish_rename(self, text: str) -> None:
        sid = self._renaming
        assert sid is not None
        try:
            title = session_admin.rename(self.store, sid, text)
        except UnknownSession as e:
            self.notify(literal(e), title="Rename", severity="warning")
            return
        self.sessions = [replace(s, title=title) if s.id == sid else s for s in self.sessions]
        self.notify(say("Session {} is now titled: {}", sid, title), title="Rename")
        self._end_rename()

    def _end_rename(self) -> None:
        self._renaming = None
        box = self.query_one(Input)
        box.placeholder = "Filter by title or id…"
        box.value = ""
        self._fill("")

    def action_delete(self) -> None:
        sid = self._selected()
        if sid is None:
            return
        if sid == self.current:
            self.notify("That session is open now: switch to another one first.",
                        title="Delete", severity="warning")
            return
        if self._armed != sid:  # a delete is for good: the same key again confirms it
            self._armed = sid
            self.set_timer(CONFIRM_SECONDS, self._disarm)
            self.notify(say("Press ctrl+d again to delete session {} and its tool output.", sid),
                        title="Delete", timeout=CONFIRM_SECONDS)
            return
        self._armed = None
        refused = session_admin.delete(self.store, [sid])
        if refused:
            self.notify(say("{}; not deleted.", refused[sid]), title="Delete", severity="warning")
            return
        self.sessions = [s for s in self.sessions if s.id != sid]
        self._fill(self.query_one(Input).value)
        self.notify(say("Deleted session {}.", sid), title="Delete")

    def _disarm(self) -> None:
        self._armed = None
