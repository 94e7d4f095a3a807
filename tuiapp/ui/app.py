"""KepApp: lays out the screen and routes core events to widgets. The chat itself lives in
ChatSession (ui/chat.py); palette entries in ui/commands.py; session actions in ui/actions.py.

Layout: [functions panel] | transcript, approval panel, prompt | [tool panes]; status footer.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, cast

from textual import events, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Input, TextArea
from textual.worker import Worker, WorkerState

from tuiapp.core.display import printable, printable_line
from tuiapp.core.events import (
    Event,
    MessageAdded,
    RegistryChanged,
    ToolCallDecided,
    ToolCallRequested,
    ToolCallStarted,
    ToolFinished,
    TurnEnded,
    Usage,
)
from tuiapp.core.messages import Message
from tuiapp.core.store import Store
from tuiapp.providers.base import Provider
from tuiapp.ui import commands
from tuiapp.ui.actions import SessionActions
from tuiapp.ui.bridge import ApprovalBroker, EventBridge
from tuiapp.ui.messages import ApprovalRequested, CoreEvent, ReplyText
from tuiapp.ui.narrow import BREAKPOINTS, NarrowLayout
from tuiapp.ui.prompt_commands import SessionStarts
from tuiapp.ui.themes import register_themes, set_startup_theme
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.ui.widgets.status_footer import StatusFooter
from tuiapp.ui.widgets.transcript import Transcript
from tuiapp.ui.workbench_actions import WorkbenchActions
from tuiapp.workspace import Workspace

if TYPE_CHECKING:
    from tuiapp.ui.widgets.approval import ApprovalPanel
    from tuiapp.ui.widgets.first_run import FirstRunPanel
    from tuiapp.ui.widgets.functions_panel import FunctionsPanel
    from tuiapp.ui.widgets.tool_panes import ToolPanes


class ChatScreen(Screen[None]):
    # Focus starts in the prompt. Textual's default ("*") would focus the transcript first and
    # then move: two restyles of the whole transcript before the first frame.
    AUTO_FOCUS = "#prompt"
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = BREAKPOINTS  # ui/narrow.py

    def on_key(self, event: events.Key) -> None:
        """A printable key that nothing focused can use goes to the prompt: typing is never
        lost on a pane, the transcript or a button. Keys some widget or the app binds (an
        approval's y, a pane's c) keep their meaning."""
        focused = self.focused
        if (event.character is None or not event.is_printable or focused is None
                or isinstance(focused, TextArea | Input)):
            return
        if any(event.key in bindings.key_to_bindings
               for _node, bindings in self._modal_binding_chain):
            return
        prompt = self.query_one(PromptInput)
        prompt.focus()
        prompt.insert(event.character)
        event.stop()
        event.prevent_default()

    def on_screen_resume(self) -> None:
        """Back from an overlay (viewer, picker, palette): the prompt has the keyboard again,
        unless an approval is waiting for an answer."""
        approval = self.query("#approval")
        if not (approval and approval.first().display and approval.first().has_focus_within):
            self.query_one(PromptInput).focus()


LATER_CSS = Path(__file__).with_name("later.tcss")


class KepApp(WorkbenchActions, SessionStarts, SessionActions, NarrowLayout, App[int]):
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses live elsewhere
    TITLE = "kep"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "interrupt", "interrupt", show=False),
        Binding("ctrl+r", "retry", "retry", show=False),
        Binding("ctrl+n", "new_session", "new session", show=False),
        Binding("ctrl+o", "open_session", "open session", show=False),
        Binding("ctrl+t", "toggle_panes", "tool panes", show=False),
        Binding("ctrl+f", "toggle_functions", "functions", show=False),
        Binding("ctrl+g", "cancel_tools", "cancel tools", show=False),
        Binding("ctrl+l", "copy_reply", "copy last reply", show=False),
        Binding("ctrl+b", "toggle_thinking", "thinking", show=False),
    ]

    def __init__(self, ws: Workspace, *, model: str, store: Store | None, session_id: str | None,
                 history: Sequence[Message], provider: Provider | None, first_run: bool,
                 label: str | None, watch: bool) -> None:
        super().__init__()
        self.ws, self.store, self.label, self.watch = ws, store, label, watch
        self.first_run = first_run
        self.broker = ApprovalBroker(self.post_message)
        self._bridge = EventBridge(self.post_message)
        self._first_chat = (model, session_id, tuple(history), provider)  # self.chat: built later
        self.tools_ready = asyncio.Event()  # set after the first registry refresh, panels in
        self.theme_errors = register_themes(self)
        self._themes_registered = True
        if ws.config.theme in self.available_themes:
            set_startup_theme(self, ws.config.theme)
        else:
            self.theme_errors.append(f"theme {ws.config.theme!r} not found; using the default")
            self.stylesheet.set_variables(self.get_css_variables())
        self._panes_hidden_by_user = False
        # Set by `kep` (commands/tui.py), which starts with the garbage collector off.
        self.resume_gc = False
        self._later_css = False
        self._finishing = False  # _finish_startup is scheduled

    def get_css_variables(self) -> dict[str, str]:
        # App.__init__ asks for the default theme's variables before kep's themes are
        # registered; __init__ sets the chosen theme's right after, so that first set (a
        # few ms of colour arithmetic) is not computed.
        if not getattr(self, "_themes_registered", False):
            return {}
        return super().get_css_variables()

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Notifications carry foreign text (tool names, a server's error): the display edge
        (core.display) for every one of them."""
        super().notify(printable(message), title=printable_line(title), severity=severity,
                       timeout=timeout, markup=markup)

    def _sink(self, event: Event) -> None:
        self.broker.observe(event)
        self._bridge(event)

    # The panels that start hidden: built on first use (their modules are imported then) and
    # mounted once the first frame is on screen (_finish_startup), so neither their imports nor
    # their styles delay it. Until mounted they keep what they are given.

    @cached_property
    def approval(self) -> ApprovalPanel:
        from tuiapp.ui.widgets.approval import ApprovalPanel

        return ApprovalPanel(self.ws.root, id="approval")

    @cached_property
    def panes(self) -> ToolPanes:
        from tuiapp.ui.widgets.tool_panes import ToolPanes

        return ToolPanes(self.ws.config.pane_lines, id="panes", classes="-hidden")

    @cached_property
    def functions(self) -> FunctionsPanel:
        from tuiapp.ui.widgets.functions_panel import FunctionsPanel

        return FunctionsPanel(self.ws.root, id="functions", classes="-hidden")

    def compose(self) -> ComposeResult:
        with Horizontal(id="body"), Vertical(id="chat"):
            with Transcript(id="transcript"):
                if self.first_run:
                    # Composed, not mounted in on_mount: an await there delays the first
                    # frame (the app draws nothing until on_mount returns).
                    from tuiapp.ui.widgets.first_run import FirstRunPanel

                    yield FirstRunPanel(self.ws.config)
            yield PromptInput(self._prompt_history(), id="prompt")
        yield StatusFooter(id="status")

    def get_default_screen(self) -> Screen[None]:
        return ChatScreen(id="_default")

    def _prompt_history(self) -> Iterable[str]:
        return [m.content for m in self._first_chat[2] if m.role == "user"]

    async def on_mount(self) -> None:
        model, session_id, history, _ = self._first_chat
        footer = self.query_one(StatusFooter)
        footer.model, footer.label, footer.session_id = model, self.label, session_id
        footer.base_usage = self.session_usage(session_id)
        self.query_one(PromptInput).focus()
        if history:
            self.load_later_css()
            await self.show_session_history()
        for error in self.theme_errors:
            self.notify(error, title="Theme", severity="warning", timeout=8)
        for line in self.ws.config.warnings:
            self.notify(line, title="Config", severity="warning", timeout=12)
        if self.resume_gc:
            self.call_after_refresh(_resume_gc)
        self.call_after_refresh(self.load_later_css)
        # After the first frame is on screen: startup never waits for tools.
        self.call_after_refresh(self.refresh_tools, first=True)
        from tuiapp.ui.screens.trust import ask_if_needed  # folder trust: asked once, here

        self.call_after_refresh(ask_if_needed, self)

    def load_later_css(self) -> None:
        """later.tcss: the styles of what the first frame does not show (transcript blocks,
        the panels). Before anything it styles is mounted; parsed when next needed."""
        if not self._later_css:
            self._later_css = True
            self.stylesheet.add_source(LATER_CSS.read_text(encoding="utf-8"),
                                       read_from=(str(LATER_CSS), ""), is_default_css=False)

    async def _finish_startup(self) -> None:
        """After the frame that shows the tools: the hidden panels, the chat (its provider
        SDK loading in a thread), hot reload, then `tools_ready` (a turn needs the panels and
        the chat)."""
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

    # ---- tools --------------------------------------------------------------------------

    @work(exclusive=True, group="registry", exit_on_error=False)
    async def refresh_tools(self, first: bool = False) -> None:
        if first:  # MCP servers start beside the listing; their tools arrive as events
            self.ws.start_mcp(emit=self._sink, on_state=self._mcp_state)
        try:
            change = await self.ws.registry.refresh()
        except Exception as e:  # a registry bug must not take the chat down
            self.notify(f"could not list tools: {e}", severity="error")
            change = None
        finally:
            if not self._finishing:
                # The first listing: the tools are drawn first, the panels mounted after.
                self._finishing = True
                self.call_after_refresh(self._finish_startup)
        self.show_tools()
        if not first and isinstance(change, RegistryChanged):
            self.notify(f"Tools reloaded: {change.summary()}", title="Functions")

    def _welcome(self) -> list[FirstRunPanel]:
        # By id: the panel's module is imported only when a first frame shows it.
        return cast("list[FirstRunPanel]", list(self.query("#first-run")))

    def copy_to_clipboard(self, text: str) -> None:
        """Every copy (a selection with ctrl+c, a reply with ctrl+l) says so: the terminal
        takes it silently (OSC 52), and some terminals ignore it."""
        super().copy_to_clipboard(text)
        lines = text.count("\n") + 1
        self.notify(f"Copied {len(text):,} characters ({lines:,} line{'s' * (lines != 1)}) to "
                    "the clipboard.", title="Copy", timeout=3)

    def action_copy_reply(self) -> None:
        """The selected text if there is some, else the last reply, as Markdown. (ctrl+l: the
        prompt keeps ctrl+y for redo.)"""
        selected = self.screen.get_selected_text()
        if selected:
            self.copy_to_clipboard(selected)
            return
        from tuiapp.ui.widgets.reply import AssistantReply

        replies = [r for r in self.query(AssistantReply) if r.text.strip()]
        if not replies:
            self.notify("Nothing to copy yet: no reply, and no text selected.", title="Copy")
            return
        self.copy_to_clipboard(replies[-1].text)

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """Textual's "Save screenshot", but it always says where the file went, or why not:
        into Downloads when that folder exists, else kep's data folder."""
        from platformdirs import user_downloads_path

        from tuiapp import paths

        if path is None:
            downloads = user_downloads_path()
            path = str(downloads if downloads.is_dir() else paths.data_dir() / "screenshots")
        try:
            Path(path).mkdir(parents=True, exist_ok=True)
            saved = self.save_screenshot(filename, path)
        except OSError as e:
            self.notify(f"Screenshot not saved: {path}: {e.strerror or e}", title="Screenshot",
                        severity="error", timeout=10)
            return
        self.notify(f"Saved {saved}", title="Screenshot")

    async def action_show_welcome(self) -> None:
        if self._welcome():
            return
        from tuiapp.ui.widgets.first_run import FirstRunPanel

        panel = FirstRunPanel(self.ws.config)
        transcript = self.query_one(Transcript)
        await transcript.mount(panel, before=0 if transcript.children else None)
        panel.show_tools(self.ws.registry.entries())
        transcript.refresh(layout=True)
        self.call_after_refresh(transcript.scroll_to_widget, panel, top=True, animate=False)

    def show_tools(self) -> None:
        entries = self.ws.registry.entries()
        self.functions.update_entries(entries)
        self.bench_sync()
        for panel in self._welcome():
            panel.show_tools(entries)

    # ---- the conversation ----------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return any(w.group == "conversation" and not w.is_finished for w in self.workers)

    def set_state(self, state: str) -> None:
        self.query_one(StatusFooter).state = state

    async def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        if self.busy:
            self.query_one(PromptInput).load_text(message.text)
            self.notify("kep is still answering: Esc interrupts it.", severity="warning")
            return
        for panel in self._welcome():
            await panel.dismiss()
        self.set_state("streaming")
        self.converse(message.text)

    @work(exclusive=True, group="conversation", exit_on_error=False)
    async def converse(self, text: str | None) -> None:
        """One turn (text) or a retry (None), in the background: the UI never waits on it."""
        await self.tools_ready.wait()
        try:
            await (self.chat.send(text) if text is not None else self.chat.retry())
        except Exception as e:  # a bug, not a provider error (those are events)
            self.notify(f"internal error: {type(e).__name__}: {e}", severity="error", timeout=15)
            self.set_state("error")
            raise

    def action_retry(self) -> None:
        """After a provider error or an interrupt: the same request again."""
        history = self.chat.history
        failed = self.query_one(StatusFooter).state == "error" or (
            bool(history) and history[-1].interrupted)
        if self.busy or self.chat.conversation is None or not failed:
            self.notify("Nothing to retry.")
            return
        self.set_state("streaming")
        self.converse(None)

    async def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # A turn cancelled before the core could say so (e.g. while tools were still being
        # listed) still has to leave the screen idle.
        worker = event.worker
        if worker.group == "conversation" and worker.is_finished and not self.busy:
            self.approval.drop_closed()
            self.query_one(Transcript).end_reply(
                interrupted=worker.state == WorkerState.CANCELLED)
            if self.query_one(StatusFooter).state != "error":
                self.set_state("error" if worker.state == WorkerState.ERROR else "idle")

    def action_interrupt(self) -> None:
        if self.approval.waiting and not self.approval.has_focus_within:
            self.approval.focus()  # Esc in the message box: over to the waiting call
        elif self.chat.running:
            self.chat.cancel_tools()
        elif self.busy and not self.approval.display:
            self.workers.cancel_group(self, "conversation")
        elif not self.busy:
            for panel in self._welcome():
                panel.dismiss()

    def on_prompt_input_interrupt(self) -> None:
        self.action_interrupt()

    def action_cancel_tools(self) -> None:
        if not self.chat.cancel_tools():
            self.notify("No tool is running.")

    def on_reply_text(self, message: ReplyText) -> None:
        self.query_one(Transcript).stream_text(message.text)

    async def on_core_event(self, message: CoreEvent) -> None:
        event = message.event
        self.query_one(Transcript).handle(event)
        self.panes.handle(event)
        if (isinstance(event, ToolCallRequested) and not self._panes_hidden_by_user
                and not self.narrow):  # (narrow: an overlay opens only when asked for)
            self.panes.remove_class("-hidden")
        if isinstance(event, MessageAdded) and event.message.tool_calls:
            self.approval.start_reply(event.message.tool_calls)
        elif isinstance(event, (ToolCallDecided, ToolFinished)):
            self.approval.settle(event)
        if isinstance(event, ToolCallStarted):
            self.set_state("tools")
        elif isinstance(event, ToolFinished) and not self.chat.running:
            self.set_state("streaming")
        elif isinstance(event, Usage):
            self.query_one(StatusFooter).usage = event
        elif isinstance(event, TurnEnded):
            self.set_state("error" if event.stop_reason == "error" else "idle")
            self.approval.drop_closed()
            self.query_one(StatusFooter).session_id = self.chat.session_id
        elif isinstance(event, RegistryChanged):
            self.show_tools()

    # ---- approval ---------------------------------------------------------------------

    def on_approval_requested(self, message: ApprovalRequested) -> None:
        req = message.request
        if block := self.query_one(Transcript).block(req.call.id):
            block.asking(req.verdict.rule)
        self.approval.push(req)
        self.set_state("approval")
        if not self.approval.has_focus_within and not self._prompt_in_use():
            self.approval.focus()

    def _prompt_in_use(self) -> bool:
        """The user is writing in the message box (it has the keyboard and some text): a
        call that appears now must not take the keyboard (Esc there moves to it). An empty
        box is not in use: keys typed just as the call appears are caught by its guard."""
        prompt = self.query_one(PromptInput)
        return prompt.has_focus and bool(prompt.text)

    def on_approval_panel_typed(self, message: ApprovalPanel.Typed) -> None:
        prompt = self.query_one(PromptInput)
        prompt.focus()
        prompt.insert(message.text)

    def on_approval_panel_leave(self) -> None:
        self.query_one(PromptInput).focus()

    def on_approval_panel_answered_all(self, message: ApprovalPanel.AnsweredAll) -> None:
        # Requests of the same reply that reached the panel meanwhile get the same answer.
        self.broker.answer_rest(message.approval)
        self.approval.answer_matching(self.broker.in_batch, message.approval)

    def on_approval_panel_done(self) -> None:
        if self.approval.display:
            return  # the next call arrived meanwhile: it keeps the keyboard
        self.query_one(PromptInput).focus()
        if self.busy:
            self.set_state("tools" if self.chat.running else "streaming")

    def on_approval_panel_rule_requested(self, message: ApprovalPanel.RuleRequested) -> None:
        self.add_rule(message.tool, message.action)

    def on_tool_panes_cancel_requested(self, message: ToolPanes.CancelRequested) -> None:
        self.chat.cancel_tools(message.call_id)

    # ---- panes and palette --------------------------------------------------------------

    def action_toggle_panes(self) -> None:
        self.panes.toggle_class("-hidden")
        self._panes_hidden_by_user = self.panes.has_class("-hidden")

    def action_toggle_functions(self) -> None:
        self.functions.toggle_class("-hidden")

    def action_reload_tools(self) -> None:
        self.refresh_tools()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from commands.kep_commands(self)
        # Textual's own entries, minus its theme picker (ours saves the choice).
        yield from (c for c in super().get_system_commands(screen) if c.title != "Theme")

    async def on_unmount(self) -> None:
        await self.stop_background()


def _resume_gc() -> None:
    """Once on screen: what startup built stays for good (frozen: no collection walks it
    again), and collection is back on for what comes next."""
    gc.freeze()
    gc.enable()


def make_app(workspace: Workspace, *, model: str, store: Store | None = None,
             session_id: str | None = None, history: Sequence[Message] = (),
             provider: Provider | None = None, first_run: bool = False,
             label: str | None = None, watch: bool = False) -> KepApp:
    """The app, ready to run() or run_test(). `provider` replaces the one named by `model`
    (tests, screenshots); `watch` turns on hot reload of tools, config and themes."""
    return KepApp(workspace, model=model, store=store, session_id=session_id, history=history,
                  provider=provider, first_run=first_run, label=label, watch=watch)
