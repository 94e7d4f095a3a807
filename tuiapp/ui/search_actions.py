"""KepApp's session search (a mixin): `action_search(words)` opens the search screen (the
`/search WORDS` command and the palette entry map to it); picking a hit opens its session and
scrolls to that message. The search itself is conversation.session_search."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import TYPE_CHECKING, Any

from textual.app import App

if TYPE_CHECKING:
    from tuiapp.conversation.store import Store
    from tuiapp.project.workspace import Workspace

JUMP_TRIES = 200  # pages drawn or refreshes waited for (50 ms each) before the jump gives up


class SearchActions(App[int]):
    """Mixed into KepApp, which provides the store, the workspace, the chat and resume()."""

    store: Store | None
    ws: Workspace
    chat: Any

    def action_search(self, words: str = "") -> None:
        if self.store is None:
            self.notify("Sessions are not being saved in this run.", severity="warning")
            return
        from tuiapp.ui.screens.search import Found, SearchScreen

        def found(answer: Found | None) -> None:
            if answer is not None:
                self.open_at(answer.session_id, answer.seq)

        self.push_screen(SearchScreen(self.store, self.ws.root, words), found)

    def open_at(self, session_id: str, seq: int) -> None:
        self.run_worker(partial(self._open_at, session_id, seq), exclusive=True,
                        group="search-jump")

    async def _open_at(self, session_id: str, seq: int) -> None:
        if session_id != self.chat.session_id:
            if getattr(self, "busy", False):
                self.notify("Cannot open another session while kep is answering: Esc "
                            "interrupts it first.", severity="warning")
                return
            await self.resume(session_id).wait()  # type: ignore[attr-defined]
            if self.chat.session_id != session_id:
                return  # refused (open in another kep): resume said why
        await scroll_to_message(self, seq - 1)


async def scroll_to_message(app: App[Any], index: int) -> None:
    """Draw earlier pages until message `index` (0-based) has a widget, then scroll it to
    the top. A tool result has no widget of its own: the nearest message before it is used."""
    from tuiapp.ui.widgets.transcript import EarlierMessages, Transcript

    transcript = app.query_one(Transcript)
    for _ in range(JUMP_TRIES):
        for i in range(index, max(-1, index - 50), -1):
            drawn = transcript.query(f".message-{i}")
            if drawn:
                widget = drawn.first()
                widget.add_class("search-hit")
                # Not pinned to the end any more (new text would scroll the hit away), and
                # scrolled once the pages drawn above it have their height.
                transcript.anchor(False)
                transcript.scroll_to_widget(widget, top=True, animate=False)
                transcript.call_after_refresh(transcript.scroll_to_widget, widget, top=True,
                                              animate=False)
                return
        marker = transcript.query(EarlierMessages)
        if marker and marker.first().count > index:
            await transcript.show_earlier(marker.first())
        else:
            await asyncio.sleep(0.05)  # the tail's first screen is drawn after a refresh
