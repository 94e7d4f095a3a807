"""KepApp: lays out the screen, starts up in stages and keeps the tools listed. The chat
itself lives in ChatSession (ui/chat.py); core events and turns are routed in
ui/conversation_routing.py, approvals in ui/approval_routing.py; palette entries in
ui/commands.py; session actions in ui/actions.py; the screen in ui/chat_screen.py.

Layout: [functions panel] | transcript, approval panel, prompt | [tool panes]; status footer."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, cast

from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.notifications import SeverityLevel
from textual.screen import Screen

from tuiapp.conversation.store import Store
from tuiapp.project.workspace import Workspace
from tuiapp.providers.base import Provider
from tuiapp.security.display import printable, printable_line
from tuiapp.ui import commands, mcp_requests
from tuiapp.ui.actions import SessionActions
from tuiapp.ui.approval_routing import ApprovalRouting
from tuiapp.ui.bridge import ApprovalBroker, EventBridge
from tuiapp.ui.chat_screen import ChatScreen
from tuiapp.ui.conversation_routing import ConversationRouting
from tuiapp.ui.deferred_start import DeferredStart, freeze_startup_heap
from tuiapp.ui.focus import focus_now
from tuiapp.ui.literal import literal, say
from tuiapp.ui.mode_actions import ModeActions
from tuiapp.ui.model_options import ModelOptionActions
from tuiapp.ui.narrow import NarrowLayout
from tuiapp.ui.prompt_commands import SessionStarts
from tuiapp.ui.screens.output_viewer import OpensOutputViewer
from tuiapp.ui.themes import register_themes, set_startup_theme
from tuiapp.ui.waiting_notice import WaitingNotice
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.ui.widgets.status_footer import StatusFooter
from tuiapp.ui.widgets.transcript import Transcript
from tuiapp.ui.workbench_actions import WorkbenchActions
from tuiapp.vocab.events import Event, RegistryChanged
from tuiapp.vocab.messages import Message

if TYPE_CHECKING:
    from tuiapp.ui.widgets.approval import ApprovalPanel
    from tuiapp.ui.widgets.first_run import FirstRunPanel
    from tuiapp.ui.widgets.functions_panel import FunctionsPanel
    from tuiapp.ui.widgets.tool_panes import ToolPanes


LATER_CSS = Path(__file__).with_name("later.tcss")


# The routing mixins come first: Textual calls every class's handler of a message in MRO
# order, and KepApp's own (now theirs) ran before the other mixins'.
class KepApp(ConversationRouting, ApprovalRouting, WorkbenchActions, SessionStarts,
             SessionActions, ModelOptionActions, ModeActions, WaitingNotice, NarrowLayout,
             OpensOutputViewer, DeferredStart, App[int]):
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses live elsewhere
    TITLE = "kep"
    COMMANDS = SessionStarts.COMMANDS | {commands.McpCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "interrupt", "interrupt", show=False, id="interrupt"),
        Binding("ctrl+r", "retry", "retry", show=False, id="retry"),
        Binding("ctrl+n", "new_session", "new session", show=False, id="new_session"),
        Binding("ctrl+o", "open_session", "open session", show=False, id="open_session"),
        Binding("ctrl+t", "toggle_panes", "tool panes", show=False, id="toggle_panes"),
        Binding("ctrl+f", "toggle_functions", "functions", show=False, id="toggle_functions"),
        Binding("ctrl+g", "cancel_tools", "cancel tools", show=False, id="cancel_tools"),
        Binding("ctrl+l", "copy_reply", "copy last reply", show=False, id="copy_reply"),
        Binding("ctrl+b", "toggle_thinking", "thinking", show=False, id="toggle_thinking"),
        Binding("ctrl+s", "switch_mode", "approval mode", show=False, id="switch_mode"),
        Binding("alt+r", "show_rules", "approval rules", show=False, id="show_rules"),
        Binding("f1", "help", "help", show=False, id="help"), Binding(
            "ctrl+up", "rewind", "rewind", show=False, id="rewind"),
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

    def notify(self, message: str | Content, *, title: str | Content = "",
               severity: SeverityLevel = "information", timeout: float | None = None,
               markup: bool = True) -> None:
        """A notification. Foreign text (a tool's name, a server's error) comes only as
        Content built by ui.literal (`say`, `literal`): shown as it is. A str is kep's or
        Textual's own words, and may use markup (`Press [b]ctrl+q[/b] to quit`); a test
        fails on any notify() whose message is a str built from a variable."""
        if isinstance(message, Content):
            text, markup = message.plain, False
        else:
            text = printable(message)  # (markup: kep's constant text, Textual's own notices)
        head = title.plain if isinstance(title, Content) else printable_line(title)
        super().notify(text, title=head, severity=severity, timeout=timeout, markup=markup)

    def _sink(self, event: Event) -> None:
        self.ws.note_decided(event)  # the rules screen's "decided" counts
        self.broker.observe(event)
        self._bridge(event)

    # The panels that start hidden: built on first use (their modules are imported then) and
    # mounted once the first frame is on screen (_finish_startup), so neither their imports nor
    # their styles delay it. Until mounted they keep what they are given.

    @cached_property
    def approval(self) -> ApprovalPanel:
        from tuiapp.ui.widgets.approval import ApprovalPanel

        panel = ApprovalPanel(self.ws.root, id="approval")
        self.answers_for(panel)
        return panel

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
        footer.mode = self.ws.mode
        footer.base_usage = self.session_usage(session_id)
        self.query_one(PromptInput).focus()
        if history:
            self.load_later_css()
            await self.show_session_history()
        for error in self.theme_errors:
            self.notify(literal(error), title="Theme", severity="warning", timeout=8)
        for line in self.ws.config.warnings:
            self.notify(literal(line), title="Config", severity="warning", timeout=12)
        if self.resume_gc:
            self.call_after_refresh(freeze_startup_heap)
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

    # ---- tools --------------------------------------------------------------------------

    @work(exclusive=True, group="registry", exit_on_error=False)
    async def refresh_tools(self, first: bool = False) -> None:
        if first:  # MCP servers start beside the listing; their tools arrive as events
            mcp_requests.start(self, self._sink, self._mcp_state)  # also answers their asks
            self.run_worker(partial(self.ws.session_started, self._sink),
                            group="session-hooks", exit_on_error=False)
            from tuiapp.security import shell_split

            self.run_worker(shell_split.warm, thread=True, group="warm", exit_on_error=False)
        try:
            change = await self.ws.registry.refresh()
        except Exception as e:  # a registry bug must not take the chat down
            self.notify(say("could not list tools: {}", e), severity="error")
            change = None
        finally:
            if not self._finishing:
                # The first listing: the tools are drawn first, the panels mounted after.
                self._finishing = True
                self.call_after_refresh(self._finish_startup)
        self.show_tools()
        if not first and isinstance(change, RegistryChanged):
            self.notify(say("Tools reloaded: {}", change.summary()), title="Functions")

    def _welcome(self) -> list[FirstRunPanel]:
        # By id: the panel's module is imported only when a first frame shows it.
        return cast("list[FirstRunPanel]", list(self.query("#first-run")))

    def copy_to_clipboard(self, text: str) -> None:
        """Every copy (a selection with ctrl+c, a reply with ctrl+l) says so: the terminal
        takes it silently (OSC 52), and some terminals ignore it."""
        super().copy_to_clipboard(text)
        lines = text.count("\n") + 1
        self.notify(say("Copied {} characters ({} line{}) to the clipboard.",
                        format(len(text), ","), format(lines, ","), "s" * (lines != 1)),
                    title="Copy", timeout=3)

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
        self.deliver_screenshot(filename, path)

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        """Textual's "Screenshot" (its palette entry and action both end here), but it always
        says where the file went, or why not: into Downloads when that folder exists, else
        kep's data folder. (Textual's own delivery saves to Downloads even when there is none,
        and says only "Failed".)"""
        from platformdirs import user_downloads_path
        from textual._files import generate_datetime_filename

        from tuiapp.settings import paths

        if path is None:
            downloads = user_downloads_path()
            path = str(downloads if downloads.is_dir() else paths.data_dir() / "screenshots")
        name = filename or generate_datetime_filename(self.title, ".svg", time_format)
        try:
            Path(path).mkdir(parents=True, exist_ok=True)
            saved = self.save_screenshot(name, path)
        except OSError as e:
            self.notify(say("Screenshot not saved: {}: {}", path, e.strerror or e),
                        title="Screenshot", severity="error", timeout=10)
            return None
        self.notify(say("Saved {}", saved), title="Screenshot")
        return saved

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

    # ---- panes and palette --------------------------------------------------------------

    def action_toggle_panes(self) -> None:
        """Opening the panes gives the newest pane the keyboard (its letter keys wait a
        moment: ui/focus.py); closing them while they have it gives it back to the prompt."""
        panes = self.panes
        had_keyboard = panes.has_focus_within
        panes.toggle_class("-hidden")
        self._panes_hidden_by_user = panes.has_class("-hidden")
        self.fit_panels()
        if self._panes_hidden_by_user:
            if had_keyboard:
                focus_now(self.query_one(PromptInput))
        elif logs := panes.query("OutputLog"):
            focus_now(logs.last())

    def action_toggle_functions(self) -> None:
        """Ctrl+F opens the functions panel with the keyboard in its filter (so `/word`
        filters, never reaching the model); with the panel open elsewhere it takes the
        keyboard; with the keyboard in it, it closes."""
        panel = self.functions
        if panel.has_class("-hidden") or not panel.has_focus_within:
            panel.remove_class("-hidden")
            panel.action_filter()
        else:
            panel.add_class("-hidden")
            focus_now(self.query_one(PromptInput))
        self.fit_panels()

    def action_help(self, topic: str = "overview") -> None:
        from tuiapp.ui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(topic))

    def action_reload_tools(self) -> None:
        self.refresh_tools()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from commands.kep_commands(self)
        # Textual's own entries, minus its theme picker (ours saves the choice).
        yield from (c for c in super().get_system_commands(screen) if c.title != "Theme")

    async def on_unmount(self) -> None:
        await self.stop_background()


def make_app(workspace: Workspace, *, model: str, store: Store | None = None,
             session_id: str | None = None, history: Sequence[Message] = (),
             provider: Provider | None = None, first_run: bool = False,
             label: str | None = None, watch: bool = False) -> KepApp:
    """The app, ready to run() or run_test(). `provider` replaces the one named by `model`
    (tests, screenshots); `watch` turns on hot reload of tools, config and themes."""
    return KepApp(workspace, model=model, store=store, session_id=session_id, history=history,
                  provider=provider, first_run=first_run, label=label, watch=watch)
