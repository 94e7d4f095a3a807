"""What kep does once its first frame is on screen: the hidden panels, the provider SDK (loaded
in a thread), hot reload, then settling the heap. Startup never waits for any of it. Part of
KepApp.

The user may quit before it is done (ctrl+q in the first moments): what is still to be
mounted then meets a screen being taken down, which ends it quietly, never as a traceback on
the way out. That is decided once, in `_handle_exception`, for this and every other piece of
deferred work (timers, callbacks after a refresh, workers)."""

from __future__ import annotations

import asyncio
import gc
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import App
from textual.css.query import NoMatches
from textual.widget import MountError

from tuiapp.ui.widgets.prompt_input import PromptInput

if TYPE_CHECKING:
    from tuiapp.ui.chat import ChatSession
    from tuiapp.ui.widgets.approval import ApprovalPanel
    from tuiapp.ui.widgets.functions_panel import FunctionsPanel
    from tuiapp.ui.widgets.tool_panes import ToolPanes


class DeferredStart(App[int]):
    functions: FunctionsPanel
    approval: ApprovalPanel
    panes: ToolPanes
    watch: bool
    tools_ready: asyncio.Event

    if TYPE_CHECKING:
        @property
        def chat(self) -> ChatSession: ...
        @property
        def busy(self) -> bool: ...
        def load_later_css(self) -> None: ...
        def watch_files(self) -> Any: ...

    def quitting(self) -> bool:
        """The app is being taken down (asked to exit, or closing)."""
        return self._closing or self._closed or self.return_code is not None

    def _handle_exception(self, error: Exception) -> None:
        """Work still under way when the user quits (a timer, a deferred mount or query, a
        worker) meets widgets being taken down: that ends the work, never the app with an
        error and a traceback on the way out. Decided here, for every such callback."""
        cause = getattr(error, "error", error)  # a worker's failure wraps what it raised
        if self.quitting() and isinstance(cause, (MountError, NoMatches)):
            return
        super()._handle_exception(error)

    async def _finish_startup(self) -> None:
        """After the frame that shows the tools: the hidden panels, the chat (its provider
        SDK loading in a thread), hot reload, then `tools_ready` (a turn needs both)."""
        try:
            self.load_later_css()
            body = self.query_one("#body")
            if self.functions.parent is None:
                await body.mount(self.functions, before=0)
            if self.approval.parent is None:
                await self.query_one("#chat").mount(self.approval,
                                                    before=self.query_one(PromptInput))
            if self.panes.parent is None:  # (a new session mounts its own panes)
                await body.mount(self.panes)
            self.chat.preload()
            self._settle_heap()
            if self.watch:
                self.watch_files()  # (its imports, watchfiles and anyio, are not small)
        finally:
            self.tools_ready.set()

    @work(group="heap", exit_on_error=False)
    async def _settle_heap(self) -> None:
        """Once the provider SDK is in (most of what kep loads after its first frame): one
        full collection while idle, then freeze what is left. It lives as long as the app,
        and a collection during a stream would otherwise walk all of it (one took 160 ms,
        in the middle of a reply)."""
        await self.chat.preloaded()
        if not self.busy:
            gc.collect()
            gc.freeze()


def freeze_startup_heap() -> None:
    """Once on screen: what startup built stays for good (frozen: no collection walks it
    again), and collection is back on for what comes next."""
    gc.freeze()
    gc.enable()
