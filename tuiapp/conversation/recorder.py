"""Emit sinks: record a Conversation's events into the session store, and fan events out."""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections import deque
from collections.abc import Callable

from tuiapp.conversation.session_lock import acquire
from tuiapp.conversation.store import Store
from tuiapp.conversation.store_schema import StoreError
from tuiapp.vocab.events import Event, MessageAdded, TextDelta, ToolFinished

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


BIG_EVENT = 256 * 1024  # characters: an event this large is committed by a writer thread


def event_size(event: Event) -> int:
    """About how many characters recording `event` writes (its text, content or result)."""
    if isinstance(event, TextDelta):
        return len(event.text)
    if isinstance(event, MessageAdded):
        message = event.message
        return len(message.content) + sum(len(str(c.arguments)) for c in message.tool_calls)
    if isinstance(event, ToolFinished):
        return len(event.result)
    return 0


class OrderedRecorder:
    """A SessionRecorder for an event loop: a huge event is committed by a writer thread, so
    the loop (the keys, the screen) never waits ~0.2 s for a 10 MB reply to be written.

    The promise of "record first" holds: `record(event, then)` runs `then` (showing the event)
    on the loop only once the event is committed, and in the order the events came. Small
    events are committed at once on the loop's thread, as SessionRecorder does, while nothing
    waits for the writer; from a big event on, every event goes through the writer (one
    thread, first in first out) until it has caught up. The writer has its own connection
    (a Store is used by the thread that opened it); SQLite's own lock orders it with the
    loop's connection, and nothing else writes this session meanwhile (session_lock).
    """

    def __init__(self, recorder: SessionRecorder, loop: asyncio.AbstractEventLoop) -> None:
        self.recorder = recorder
        self._loop = loop
        self._jobs: queue.SimpleQueue[Event | None] = queue.SimpleQueue()
        self._writer: threading.Thread | None = None
        self._backlog: deque[tuple[bool, Callable[[], None]]] = deque()  # (awaits a commit, then)
        self._committed = 0  # commits not yet matched to their event in _backlog
        self._busy = 0  # events handed to the writer, not committed yet
        self._generation = 0  # a drained writer's late commit callbacks are ignored

    @property
    def error(self) -> str | None:
        return self.recorder.error

    def record(self, event: Event, then: Callable[[], None]) -> None:
        if not self._busy and not self._backlog and event_size(event) < BIG_EVENT:
            self.recorder(event)
            then()
            return
        self._backlog.append((True, then))
        self._busy += 1
        self._start_writer()
        self._jobs.put(event)

    def after(self, then: Callable[[], None]) -> None:
        """Run `then` once every event recorded so far is committed (at once if it is)."""
        if self._backlog:
            self._backlog.append((False, then))
        else:
            then()

    async def settled(self) -> None:
        """Until every event recorded so far is committed and shown."""
        done = self._loop.create_future()
        self.after(lambda: done.done() or done.set_result(None))
        await done

    def drain(self) -> None:
        """Block until the writer has committed everything and closed (closing a session:
        the next reader, or the next owner of the session, finds it all on disk)."""
        writer, self._writer = self._writer, None
        if writer is not None:
            self._jobs.put(None)
            writer.join()
        self._generation += 1
        self._committed = self._busy = 0
        while self._backlog:  # the commit callbacks the loop has not run yet
            self._backlog.popleft()[1]()

    def _start_writer(self) -> None:
        if self._writer is None:
            self._writer = threading.Thread(target=self._write, args=(self._generation,),
                                            name="kep-session-writer", daemon=True)
            self._writer.start()

    def _write(self, generation: int) -> None:
        own = self.recorder
        try:
            store = Store.open(own.store.path)
        except (StoreError, sqlite3.Error) as e:
            store, failure = None, f"session {own.session_id} is no longer being saved: {e}"
        else:
            store._runs.update(own.store._runs)  # the run that Usage totals go under
            failure = None
        try:
            while (event := self._jobs.get()) is not None:
                if own.error is None and failure is None and store is not None:
                    try:
                        store.record(own.session_id, event)
                    except sqlite3.Error as e:
                        failure = f"session {own.session_id} is no longer being saved: {e}"
                try:
                    self._loop.call_soon_threadsafe(self._done, generation, failure)
                except RuntimeError:  # the loop is closed: nobody waits for this any more
                    pass
        finally:
            if store is not None:
                store.close()

    def _done(self, generation: int, failure: str | None) -> None:
        if generation != self._generation:
            return
        if failure is not None and self.recorder.error is None:
            self.recorder.error = failure
            if self.recorder.on_error is not None:
                self.recorder.on_error(failure)
        self._busy = max(0, self._busy - 1)
        self._committed += 1
        while self._backlog:
            waits, then = self._backlog[0]
            if waits:
                if not self._committed:
                    break
                self._committed -= 1
            self._backlog.popleft()
            then()
