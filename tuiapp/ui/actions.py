"""What the palette and keys do to the session and settings: new, resume, export, model,
theme, approval rules, config, hot reload. Part of KepApp (kept apart so app.py stays thin)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING, cast

from textual import work
from textual.command import SimpleCommand

from tuiapp.project import config as project_config
from tuiapp.providers import ModelError, resolve_model
from tuiapp.security import trust
from tuiapp.settings import config_types, config_writer, paths
from tuiapp.ui import commands
from tuiapp.ui.focus import focus_now
from tuiapp.ui.literal import literal, say
from tuiapp.ui.rewind_actions import RewindActions
from tuiapp.ui.search_actions import SearchActions
from tuiapp.ui.themes import save_theme_choice
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.ui.widgets.status_footer import StatusFooter
from tuiapp.ui.widgets.transcript import Transcript
from tuiapp.vocab.events import ToolCallStarted, ToolFinished, ToolOutput, Usage

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tuiapp.conversation.store import Store, ToolCallRecord
    from tuiapp.mcp.connection import ServerState
    from tuiapp.project.workspace import Workspace
    from tuiapp.providers.base import Provider
    from tuiapp.ui.bridge import ApprovalBroker
    from tuiapp.ui.chat import ChatSession
    from tuiapp.ui.widgets.approval import ApprovalPanel
    from tuiapp.ui.widgets.functions_panel import FunctionsPanel
    from tuiapp.ui.widgets.tool_panes import ToolPanes
    from tuiapp.vocab.events import Event, ToolStatus
    from tuiapp.vocab.messages import Message

PANES_RESTORED = 8  # tool panes a resumed session gets back, newest last
RESTORED_TAIL = 64 * 1024  # bytes of each one's spool file shown again
RESTORABLE = frozenset({"ok", "failed", "timed_out", "cancelled"})
FOOTER = re.compile(r"\n?\[kep: [^\n]*\]\n?\Z")


class SessionActions(RewindActions, SearchActions):
    ws: Workspace
    store: Store | None
    broker: ApprovalBroker
    approval: ApprovalPanel
    panes: ToolPanes
    functions: FunctionsPanel
    busy: bool

    if TYPE_CHECKING:
        def _sink(self, event: Event) -> None: ...
        def show_tools(self) -> None: ...

    # The chat on screen, built on first use (normally right after the first frame: ui.chat
    # brings the prompt and agent machinery, which the first frame does not need) from what
    # the app was started with: (model, session id, history, provider).
    _chat: ChatSession | None = None
    _first_chat: tuple[str, str | None, Sequence[Message], Provider | None] = (
        "offline", None, (), None)

    @property
    def chat(self) -> ChatSession:
        if self._chat is None:
            self._chat = self.new_chat(*self._first_chat)
        return self._chat

    @chat.setter
    def chat(self, chat: ChatSession) -> None:
        self._chat = chat

    def new_chat(self, model: str, session_id: str | None = None,
                 history: Sequence[Message] = (), provider: Provider | None = None
                 ) -> ChatSession:
        from tuiapp.ui.chat import ChatSession

        self.broker.reset()
        return ChatSession(self.ws, model=model, sink=self._sink, approver=self.broker,
                           store=self.store, session_id=session_id, history=history,
                           provider=provider)

    def _refuse_while_busy(self, what: str) -> bool:
        if self.busy:
            self.notify(say("Cannot {} while kep is answering: Esc interrupts it first.", what),
                        severity="warning")
        return self.busy

    # ---- sessions -----------------------------------------------------------------------

    async def show_session_history(self) -> None:
        transcript = self.query_one(Transcript)
        if self.store is not None and self.chat.session_id is not None:
            from tuiapp.conversation.transcript import Transcript as Record

            record = Record.load(self.store, self.chat.session_id)
            if any(m.summary_keeps is not None for m in record.messages):
                from dataclasses import replace

                from tuiapp.conversation.session_history import display_order

                record = replace(record, messages=display_order(record.messages))
            await transcript.show_history(record.messages, record.call_records())
            # After a refresh: panes just mounted by a session switch are still composing.
            self.call_after_refresh(self._restore_panes,
                                    self.store.tool_calls(self.chat.session_id))
        else:
            await transcript.show_history(self.chat.history)

    def _restore_panes(self, calls: Sequence[ToolCallRecord]) -> None:
        """A resumed session's last tool calls get their panes back, each with the tail of its
        spool file (the whole output stays one `o` away)."""
        from tuiapp.ui.screens.output_viewer import read_tail, split_streams

        done = [c for c in calls if c.spool_path and c.status in RESTORABLE]
        for c in done[-PANES_RESTORED:]:
            try:
                text, _size = read_tail(Path(c.spool_path), RESTORED_TAIL)
            except OSError:
                continue  # pruned or deleted: the transcript still has the result
            text = FOOTER.sub("", text)  # kep's own "[kep: ok, …]" closing line
            self.panes.handle(ToolCallStarted(c.call_id, c.name, c.spool_path))
            for stream, chunk in split_streams(text):
                self.panes.handle(ToolOutput(c.call_id, stream, chunk))
            self.panes.handle(ToolFinished(c.call_id, c.name, cast("ToolStatus", c.status),
                                           c.exit_code, c.duration_ms or 0, "", c.truncated,
                                           c.spool_path))

    async def _switch_chat(self, session_id: str | None, history: Sequence[Message]) -> None:
        from tuiapp.ui.widgets.tool_panes import ToolPanes

        self.chat.settle()  # the old session all on disk before another kep may take it
        self.chat = self.new_chat(self.chat.model, session_id, history, self.chat.provider)
        self.approval.drop_closed()
        await self.query_one(Transcript).clear()
        # Fresh panes: the old session's tool output does not belong to the new one.
        old = self.panes
        self.panes = ToolPanes(self.ws.config.pane_lines, id="panes",
                               classes=" ".join(old.classes))
        if old.parent is not None:
            await old.remove()
        await self.query_one("#body").mount(self.panes)
        footer = self.query_one(StatusFooter)
        footer.session_id, footer.state = session_id, "idle"
        footer.base_usage, footer.usage = self.session_usage(session_id), Usage()
        footer.context = None
        prompt = self.query_one(PromptInput)
        for m in history:
            if m.role == "user":
                prompt.prompt_history.add(m.content)
        if history:
            await self.show_session_history()
        focus_now(prompt)

    def session_usage(self, session_id: str | None) -> Usage:
        """What a resumed session had used: its token counter goes on from there."""
        if self.store is None or session_id is None:
            return Usage()
        try:
            return self.store.session_usage(session_id)
        except Exception:  # a broken record must not stop the resume
            return Usage()

    async def action_new_session(self) -> None:
        if not self._refuse_while_busy("start a new session"):
            await self._switch_chat(None, ())
            self.notify("New session. The previous one is saved (ctrl+o reopens it).")

    def action_open_session(self) -> None:
        if self.store is None:
            self.notify("Sessions are not being saved in this run.", severity="warning")
            return
        if self._refuse_while_busy("open another session"):
            return
        sessions = self.store.list_sessions(self.ws.root, limit=500)
        if not sessions:
            self.notify("No saved sessions in this project yet.")
            return
        from tuiapp.ui.screens.session_picker import Picked, SessionPicker

        def picked(answer: Picked | None) -> None:
            if answer is not None and answer.session_id != self.chat.session_id:
                self.resume(answer.session_id)

        self.push_screen(SessionPicker(self.store, sessions, self.chat.session_id), picked)

    @work(exclusive=True, group="session")
    async def resume(self, session_id: str) -> None:
        assert self.store is not None
        from tuiapp.conversation.session_lock import SessionBusy, acquire, release
        from tuiapp.conversation.store_schema import StoreError

        try:
            acquire(self.store, session_id)  # one live writer per session
        except SessionBusy as e:
            self.notify(say("{} (kep --session {} --fork)", e, session_id), severity="error",
                        timeout=10)
            return
        except StoreError as e:
            self.notify(literal(e), severity="error", timeout=10)
            return
        previous = self.chat.session_id
        await self._switch_chat(session_id, self.store.load_messages(session_id))
        if previous and previous != session_id:
            release(self.store, previous)
        self.notify(say("Resumed session {}.", session_id))

    def action_export_session(self) -> None:
        sid = self.chat.session_id
        if self.store is None or sid is None:
            self.notify("Nothing to export yet: send a message first.", severity="warning")
            return
        from tuiapp.conversation.transcript import Transcript as Record
        from tuiapp.conversation.transcript import to_markdown

        self.chat.settle()  # a huge last reply may still be on its way to disk
        target = self.ws.root / f"kep-session-{sid}.md"
        try:
            target.write_text(to_markdown(Record.load(self.store, sid)), encoding="utf-8")
        except OSError as e:
            self.notify(say("Export failed: {}: {}", target, e.strerror), severity="error")
            return
        self.notify(say("Exported to {}", target), title="Session exported", timeout=10)

    # ---- model and theme ----------------------------------------------------------------

    def choose_model(self) -> None:
        commands.open_model_picker(self)  # type: ignore[arg-type]

    def model_choices(self) -> dict[str, str]:
        recent = []
        if self.store is not None:
            recent = [s.model for s in self.store.list_sessions(self.ws.root, limit=30)]
        return commands.model_candidates(self.ws.config, self.chat.model, recent)

    def switch_model(self, name: str) -> None:
        if self._refuse_while_busy("switch models"):
            return
        try:
            resolve_model(self.ws.config, name)
            self.chat.switch_model(name)
        except ModelError as e:
            self.notify(literal(e), title="Cannot use that model", severity="error", timeout=10)
            return
        footer = self.query_one(StatusFooter)
        footer.model, footer.context = name, None  # another window: known at the next reply
        self.notify(say("Model: {} (from the next message on)", name))

    def action_toggle_thinking(self) -> None:
        from tuiapp.ui.widgets.thinking import ThinkingBlock

        ThinkingBlock.open_by_default = not ThinkingBlock.open_by_default
        for block in self.query(ThinkingBlock):
            block.toggle(ThinkingBlock.open_by_default)

    def choose_theme(self) -> None:
        choices = [SimpleCommand(name, (lambda n=name: self.set_theme(n)),
                                 "current" if name == self.theme else None)
                   for name in sorted(self.available_themes)]
        self.search_commands(choices, placeholder="Theme…")

    def set_theme(self, name: str) -> None:
        self.theme = name
        # The project's kep.toml wins over the user file: save where it will take effect.
        project = self.ws.config.project_file
        target = project if _has_key(project, "theme") else None
        try:
            saved = save_theme_choice(name, target)
        except (OSError, config_types.ConfigError) as e:
            self.notify(say("Theme not saved: {}", e), severity="error")
            return
        self.notify(say("Theme {} saved to {}", name, saved))

    # ---- rules, config, reload ----------------------------------------------------------

    def add_rule(self, tool: str, action: str, *, tool_regex: str | None = None,
                 args: str | None = None, label: str = "", source: str = "",
                 expires: str = "") -> None:
        """a / d in the approval panel: a rule first in the project's kep.toml (by default
        the whole tool by exact name), noting the date and the call it came from."""
        file = self.ws.config.project_file
        if not trust.state_of(self.ws.config).trusted:  # its kep.toml is not applied
            self.notify(say("Not saved: {} is not trusted, so its kep.toml is not applied. "
                            "The answer holds for now only.", self.ws.root),
                        title="Approval rule", severity="warning", timeout=10)
            return
        tool_regex = tool_regex or f"^{re.escape(tool)}$"
        try:
            from tuiapp.security import modes

            # Granted in this mode: never applies in a stricter one (deny rules: everywhere).
            limit = modes.grant_modes(self.ws.mode) if action == "allow" else ()
            config_writer.add_rule(file, tool_regex, action, args,  # type: ignore[arg-type]
                                   source=source, expires=expires, modes=limit)
            # The user's own answer: not a change for folder trust to ask about again.
            trust.accept_rule(self.ws.root, tool_regex, action, args)
            self.ws.reconfigure(project_config.load(self.ws.root))
        except (OSError, config_types.ConfigError) as e:
            self.notify(say("Could not save the rule: {}", e), severity="error", timeout=10)
            return
        what = label or tool
        verb = "always allowed" if action == "allow" else "always denied"
        text = f"{what} is now {verb}: rule added to {file}"
        if action == "allow":
            from tuiapp.security.policy import deny_rules_for

            still = deny_rules_for(tool, self.ws.config.approval)
            if still:
                text = (f"{what} is now allowed, except where a deny rule matches (deny wins): "
                        + "; ".join(r.describe() for r in still) + f". Rule added to {file}")
        self.notify(literal(text), title="Approval rule", timeout=8)

    def action_show_config(self) -> None:
        read = "\n".join(str(f) for f in self.ws.config.files) or "(none yet)"
        self.notify(say("Read:\n{}\n\nUser config: {}\nProject config: {}", read,
                        paths.user_config_file(), self.ws.config.project_file),
                    title="Config files", timeout=15)

    @work(group="watch", exit_on_error=False)
    async def watch_files(self) -> None:
        """Hot reload: tools, kep.toml / config.toml and themes, while the app runs."""
        from tuiapp.ui import live_reload

        await live_reload.run(self)  # type: ignore[arg-type]  # self is the KepApp


    # ---- background work: MCP states, shutting down --------------------------------------

    def _mcp_state(self, state: ServerState) -> None:
        if self.ws.mcp is None:
            return
        self.functions.update_servers({
            name: (s.status, s.summary() if s.status == "ready" else s.reason)
            for name, s in self.ws.mcp.states().items()})
        if state.status == "failed":
            self._mcp_failed_toast(state)

    def _mcp_failed_toast(self, state: ServerState) -> None:
        """Once per failure: the same server failing the same way at the next start says
        nothing (the functions panel keeps the state and the whole reason), and the toast is
        one short line, so it never fills a small screen."""
        import hashlib

        from tuiapp.conversation import project_marks

        kind = "mcp-failed-" + hashlib.sha256(state.name.encode()).hexdigest()[:16]
        if project_marks.get(kind, self.ws.root) == state.reason:
            return
        project_marks.put(kind, self.ws.root, state.reason)
        reason = (state.reason.splitlines() or [""])[0]
        reason = reason if len(reason) <= 60 else reason[:59] + "…"
        self.notify(say("MCP server {} failed: {} (ctrl+f: details)", state.name, reason),
                    title="MCP", severity="error", timeout=10)

    def restart_mcp_server(self, name: str) -> None:
        if self.ws.mcp is None:
            return
        try:
            self.ws.mcp.restart(name)
        except KeyError as e:
            self.notify(literal(e), title="MCP", severity="error")
            return
        self.notify(say("restarting MCP server {}", name), title="MCP")

    async def stop_background(self) -> None:
        """On exit, while the loop still runs: cancel and await the workers, so tool listers
        and running tools are killed and reaped, then close the provider and MCP servers."""
        if self._chat is not None:  # (never built: nothing ran)
            self._chat.cancel_tools()
        pending = [w for w in self.workers if not w.is_finished]
        for worker in pending:
            worker.cancel()
        waits = [asyncio.ensure_future(w.wait()) for w in pending]
        if waits:
            await asyncio.wait(waits, timeout=3)
            for w in waits:
                if w.done() and not w.cancelled():
                    w.exception()  # cancelled workers raise here; that is expected
                else:
                    w.cancel()
        if self._chat is not None:
            await self._chat.close()
        await self.ws.aclose()


def _has_key(file: Path, key: str) -> bool:
    from tuiapp.security import project_files

    try:
        return key in (project_files.read_toml(file) or {})
    except project_files.ProjectFileError:
        return False
