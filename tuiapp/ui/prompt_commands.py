"""Prompts and agents in the TUI: palette entries, the variables form, starters, the footer.

`StartCommands` lists the project's `.prompt` files and llm-functions agents in the command
palette. Choosing one asks for its variables (VariablesForm) when it has any, then starts a
new session with it: the footer shows it, an agent's conversation starters appear as
one-key suggestions on the empty chat, and a prompt's statements run like a typed turn.
`SessionStarts` is the part of KepApp that does this (a mixin, like SessionActions).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from textual import work
from textual.app import App
from textual.command import DiscoveryHit, Hit, Hits, Provider

from tuiapp.ui.literal import highlighted, literal, say
from tuiapp.ui.messages import CoreEvent
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.ui.widgets.starters import Starters
from tuiapp.ui.widgets.status_footer import StatusFooter
from tuiapp.ui.widgets.transcript import Transcript
from tuiapp.vocab.events import PromptOutput

# Prompts and agents (core.session_start, with the prompt-file parser), the variables form and
# `.print` output (Markdown) are imported when first used: the first frame needs none of them.
if TYPE_CHECKING:
    from textual.widgets import TextArea

    from tuiapp.project.session_start import StartPlan
    from tuiapp.project.workspace import Workspace
    from tuiapp.ui.chat import ChatSession

LEAVE = "Leave the prompt or agent"


def _start_errors() -> tuple[type[Exception], ...]:
    """What reading or starting a prompt/agent raises for the user to read. (An `except`
    clause evaluates this only when something was raised.)"""
    from tuiapp.conversation.prompt_model import PromptError
    from tuiapp.project.session_start import StartError

    return (StartError, PromptError)


class StartCommands(Provider):
    """Palette entries: `Prompt: NAME`, `Agent: NAME`, and leaving the active one."""

    def _entries(self) -> list[tuple[str, str, object]]:
        from tuiapp.project.session_start import choices

        app = cast("SessionStarts", self.app)
        out: list[tuple[str, str, object]] = []
        try:
            found = choices(app.ws)
        except OSError:
            found = []
        for c in found:
            title = f"{'Prompt' if c.kind == 'prompt' else 'Agent'}: {c.name}"
            out.append((title, c.description, partial(app.begin_start, c.kind, c.name)))
        if app.ws.start is not None:
            out.append((LEAVE, f"back to a plain chat (now: {app.ws.start.label})",
                        app.leave_start))
        return out

    async def discover(self) -> Hits:
        for title, help_text, action in self._entries():
            yield DiscoveryHit(literal(title, line=True), action,  # type: ignore[arg-type]
                               text=title, help=literal(help_text))  # type: ignore[arg-type]

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, action in self._entries():
            if (score := matcher.match(title)) > 0:
                yield Hit(score, highlighted(matcher, title), action,  # type: ignore[arg-type]
                          text=title, help=literal(help_text))  # type: ignore[arg-type]


def __getattr__(name: str) -> Any:
    if name == "PrintedText":  # kept importable from here
        from tuiapp.ui.widgets.printed_text import PrintedText

        return PrintedText
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class SessionStarts(App[int]):
    """KepApp's prompt/agent starts (a mixin: its message handlers run beside KepApp's)."""

    COMMANDS = App.COMMANDS | {StartCommands}
    ws: Workspace
    chat: ChatSession
    busy: bool

    if TYPE_CHECKING:
        async def _switch_chat(self, session_id: str | None, history: object) -> None: ...
        def set_state(self, state: str) -> None: ...

    # ---- choosing ---------------------------------------------------------------------

    # `kep --prompt NAME` / `kep --agent NAME`: read (and syntax-checked) before the screen
    # opened; started once the app is mounted.
    pending_start: StartPlan | None = None

    def on_mount(self) -> None:
        plan, self.pending_start = self.pending_start, None
        if plan is not None:
            self.run_worker(partial(self._begin_pending, plan), group="start-pending")

    async def _begin_pending(self, plan: StartPlan) -> None:
        # After the first listing: a variables form pushed over the chat screen before its
        # startup finished left the tools never ready, and the prompt never started.
        await self.tools_ready.wait()  # type: ignore[attr-defined]
        self.begin_plan(plan, ask=False, fresh=False)

    def begin_start(self, kind: str, name: str, sets: Mapping[str, str] | None = None) -> None:
        """The palette's choice: read the prompt/agent, then begin_plan."""
        from tuiapp.project.session_start import prepare

        if self.busy:
            self.notify("kep is still answering: Esc interrupts it first.", severity="warning")
            return
        try:
            plan = prepare(self.ws, **{kind: name}, sets=dict(sets or {}))  # type: ignore[arg-type]
        except _start_errors() as e:
            self.notify(literal(e), title=say("Cannot start {} {}", kind, name), severity="error",
                        timeout=15)
            return
        self.begin_plan(plan)

    def begin_plan(self, plan: StartPlan, *, ask: bool = True, fresh: bool = True) -> None:
        """Ask for the variables (all of them when `ask`, else only when some are missing),
        then start with the plan: in a new session when `fresh`, else in the chat on screen
        (`kep --continue --agent NAME` keeps the resumed history)."""
        fields = plan.fields()
        if fields and (ask or plan.missing()):
            from tuiapp.ui.widgets.variables_form import VariablesForm

            title = f"{plan.label} — values for its variables"
            self.push_screen(VariablesForm(title, fields),
                             callback=partial(self._form_answered, plan, fresh))
        else:
            self.start_with(plan, fresh)

    def _form_answered(self, plan: StartPlan, fresh: bool, values: dict[str, str] | None
                       ) -> None:
        if values is None:
            self.notify(say("{}: not started.", plan.label))
            return
        # Unchanged defaults stay defaults (a JSON param keeps its type).
        defaults = {f.name: f.default for f in plan.fields()}
        changed = {k: v for k, v in values.items() if v != "" and v != defaults.get(k)}
        try:
            plan = plan.with_values(changed)
        except _start_errors() as e:
            self.notify(literal(e), severity="error", timeout=15)
            return
        self.start_with(plan, fresh)

    @work(exclusive=True, group="start", exit_on_error=False)
    async def start_with(self, plan: StartPlan, fresh: bool = True) -> None:
        """A new session under `plan`: checked against the tools first, so a bad prompt sends
        nothing and leaves the current chat as it was."""
        await self.tools_ready.wait()  # type: ignore[attr-defined]
        previous = self.ws.start
        self.ws.start = plan
        try:
            await plan.ready(self.ws.runner(f"start-{uuid.uuid4().hex[:8]}"))
        except _start_errors() as e:
            self.ws.start = previous
            self.notify(say("{}\nNothing was sent.", e), title=say("Cannot start {}", plan.label),
                        severity="error", timeout=20)
            return
        if fresh or self.chat.conversation is not None:
            await self._switch_chat(None, ())
        self.query_one(StatusFooter).label = plan.label
        if plan.kind == "agent":
            await self.show_starters()
            for note in plan.notices:
                self.notify(literal(note), severity="warning", timeout=10)
            n = len(plan.visible_tools())
            self.notify(say("Agent {}: {} tool{}.", plan.name, n, 's' * (n != 1)),
                        title="Agent started")
        else:
            self.set_state("streaming")
            self.run_prompt(plan)

    @work(exclusive=True, group="conversation", exit_on_error=False)
    async def run_prompt(self, plan: StartPlan) -> None:
        """A prompt's statements, as one long turn (Esc interrupts it like any other)."""
        from tuiapp.conversation.prompt_model import PromptError

        try:
            stop = await self.chat.start(plan)
        except PromptError as e:
            self.notify(literal(e), title=say("{} stopped", plan.label), severity="error",
                        timeout=20)
            self.set_state("error")
            return
        if stop in ("end_turn", "exit"):
            self.set_state("idle")

    def leave_start(self) -> None:
        if self.busy:
            self.notify("kep is still answering: Esc interrupts it first.", severity="warning")
            return
        label = self.ws.start.label if self.ws.start else ""
        self.ws.start = None
        self.query_one(StatusFooter).label = None
        self._leave()
        self.notify(say("Left {}: a plain chat again.", label))

    @work(exclusive=True, group="start")
    async def _leave(self) -> None:
        await self._switch_chat(None, ())

    # ---- starters ---------------------------------------------------------------------

    async def show_starters(self) -> None:
        plan = self.ws.start
        if plan is None or not plan.starters or self.chat.history:
            return
        for old in self.query(Starters):
            await old.remove()
        title = plan.agent.title if plan.agent else plan.name
        await self.query_one(Transcript).add(Starters(title, plan.starters))

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        # A starter's number typed into the empty prompt sends that starter. (An app binding
        # cannot do it: Textual gives printable keys to the focused TextArea first.)
        prompt = event.text_area
        if not isinstance(prompt, PromptInput) or self.busy:
            return
        key = prompt.text
        if len(key) != 1 or not key.isdigit():
            return
        for widget in self.query(Starters):
            text = widget.text_for(key)
            if text is not None:
                prompt.clear()
                self._send_starter(text)
                return

    async def on_prompt_input_interrupt(self, message: PromptInput.Interrupt) -> None:
        if not self.busy:  # Esc on an idle chat puts the starters away (digits type again)
            for widget in self.query(Starters):
                await widget.remove()

    def on_starters_chosen(self, message: Starters.Chosen) -> None:
        self._send_starter(message.text)

    def _send_starter(self, text: str) -> None:
        # The same path as typing it and pressing Enter.
        prompt = self.query_one(PromptInput)
        prompt.prompt_history.add(text)
        prompt.post_message(PromptInput.Submitted(text))

    async def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        for widget in self.query(Starters):
            await widget.remove()

    async def action_new_session(self) -> None:
        await super().action_new_session()  # type: ignore[misc]
        await self.show_starters()

    # ---- `.print` ---------------------------------------------------------------------

    async def on_core_event(self, message: CoreEvent) -> None:
        if isinstance(message.event, PromptOutput):
            from tuiapp.ui.widgets.printed_text import PrintedText

            await self.query_one(Transcript).add(PrintedText(message.event.text))
