"""KepApp's undo and rewind (a mixin): `undo` puts back the files the last tool call of kep's
built-ins wrote; `rewind` (ctrl+up) picks one of your earlier messages and rewinds the
conversation (a forked session, the original kept), restores the files, or both. The work is
in conversation.file_undo and session_admin.fork; this only asks and reports."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import App

from tuiapp.ui.literal import literal, say

if TYPE_CHECKING:
    from tuiapp.conversation.store import Store
    from tuiapp.ui.chat import ChatSession


class RewindActions(App[int]):
    # (ctrl+up is bound in KepApp's BINDINGS, where the key table is read)
    store: Store | None
    chat: ChatSession
    busy: bool

    if TYPE_CHECKING:
        def _refuse_while_busy(self, what: str) -> bool: ...
        def resume(self, session_id: str) -> object: ...

    def _runner(self):  # type: ignore[no-untyped-def]
        return self.chat.runner or self.chat.ws.runner(self.chat.session_id or "undo")

    async def action_undo(self) -> None:
        """Put back the files the last call of kep's built-ins wrote in this session."""
        if self._refuse_while_busy("undo") or self.store is None or not self.chat.session_id:
            self.notify("Nothing to undo: this chat has no saved session.", severity="warning")
            return
        from tuiapp.conversation.file_undo import undo

        done = await undo(self.store, self.chat.session_id, self._runner(), last_call=True)
        self.notify(literal(done.summary()), title="Undo", timeout=10,
                    severity="warning" if done.failed else "information")

    def action_rewind(self) -> None:
        if self._refuse_while_busy("rewind") or self.store is None or not self.chat.session_id:
            self.notify("Nothing to rewind: this chat has no saved session.", severity="warning")
            return
        from tuiapp.ui.screens.rewind import RewindScreen

        stored = self.store.load_messages(self.chat.session_id, for_resume=False)
        users = [i for i, m in enumerate(stored) if m.role == "user"]
        if not users:
            self.notify("No message of yours to rewind to yet.")
            return

        async def picked(answer: tuple[int, str] | None) -> None:
            if answer is not None:
                await self._rewind(users[answer[0]], stored[users[answer[0]]].content,
                                   answer[1])

        self.push_screen(RewindScreen([stored[i].content for i in users]), picked)

    async def _rewind(self, at: int, text: str, choice: str) -> None:
        """`at`: how many stored messages come before the picked one."""
        from tuiapp.conversation import session_admin
        from tuiapp.conversation.file_undo import undo
        from tuiapp.ui.widgets.prompt_input import PromptInput

        assert self.store is not None and self.chat.session_id is not None
        sid = self.chat.session_id
        if choice in ("files", "both"):
            done = await undo(self.store, sid, self._runner(), after=at)
            self.notify(literal(done.summary()), title="Files restored", timeout=10,
                        severity="warning" if done.failed else "information")
        if choice in ("conversation", "both"):
            new = session_admin.fork(self.store, sid, at)
            resumed = self.resume(new)  # (a worker)
            if hasattr(resumed, "wait"):
                await resumed.wait()
            self.query_one(PromptInput).insert(text)  # to send again, or change first
            self.notify(say("Rewound: new session {} (the original {} is kept).", new, sid),
                        timeout=8)
