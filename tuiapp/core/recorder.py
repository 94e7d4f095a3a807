"""Emit sinks: record a Conversation's events into the session store, and fan events out."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from tuiapp.core.events import Event
from tuiapp.core.session_lock import acquire
from tuiapp.core.store import Store

Sink = Callable[[Event], None]


class SessionRecorder:
    """`recorder(event)` commits the event to a session before returning.

    Put it first in the chain (`chain(recorder, printer)`) so that whatever the user has seen
    is already on disk. A database failure never ends the turn: it is reported once through
    `on_error` (e.g. as a Notice) and recording stops; the conversation goes on in memory.
    """

    def __init__(self, store: Store, session_id: str,
                 on_error: Callable[[str], None] | None = None) -> None:
        self.store = store
        self.session_id = session_id
        self.on_error = on_error
        self.error: str | None = None
        # One writer per session (raises SessionBusy); then a new run seals what a killed
        # run left in this session (draft, unanswered calls).
        acquire(store, session_id)
        store.begin_run(session_id)

    def __call__(self, event: Event) -> None:
        if self.error is not None:
            return
        try:
            self.store.record(self.session_id, event)
        except sqlite3.Error as e:
            self.error = f"session {self.session_id} is no longer being saved: {e}"
            if self.on_error is not None:
                self.on_error(self.error)


def chain(*sinks: Sink) -> Sink:
    """One emit callback that calls each sink in order."""

    def emit(event: Event) -> None:
        for sink in sinks:
            sink(event)

    return emit
