"""Inline approval, above the prompt (no modal: the transcript stays in view).

Shows the tool, where it comes from, its arguments as highlighted JSON, the rule that made
kep ask and, when the model's reply has several calls, every one of them. Keys: y allow once ·
n deny (optional reason, sent to the model) · s allow for this session · a always allow ·
d always deny (s, a, d then a digit: what the grant covers) · e edit the arguments · Y / N
all pending. Each key has a button too. Requests queue in order; the panel resolves each
request's Future exactly once.

Stray typing must never answer: the app gives the panel the keyboard only when the message box
is not in use, and approval_keys holds the guards (no English word can write config or answer
several calls).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Input, Static, TextArea

from tuiapp.conversation.conversation import Approval
from tuiapp.security.display import printable, printable_line
from tuiapp.tools.source_label import shown_source
from tuiapp.ui.focus import focus_now
from tuiapp.ui.messages import PendingApproval
from tuiapp.ui.widgets.approval_diff import with_diff
from tuiapp.ui.widgets.approval_editor import ArgsEditor, parse_arguments
from tuiapp.ui.widgets.approval_grants import ChoiceButtons, GrantChoices
from tuiapp.ui.widgets.approval_keys import (
    BUTTONS,
    AnswerKeys,
    KeyButton,
    KeyReader,
    answer_key,
    fit_columns,
)
from tuiapp.ui.widgets.approval_queue import ReplyCalls
from tuiapp.vocab.events import ToolCallDecided, ToolCallForeseen, ToolFinished
from tuiapp.vocab.messages import ToolCall


class ApprovalPanel(GrantChoices, AnswerKeys, Vertical, can_focus=True):
    # The answer keys are read in on_key (guard and confirmation first); these work in the
    # reason and edit modes, where a child has the keyboard.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "back", show=False, id="approval_back"),
        Binding("ctrl+s", "run_edited", "run edited", show=False, id="approval_run_edited"),
        Binding("pagedown", "scroll_args(1)", show=False, id="approval_scroll_down"),
        Binding("pageup", "scroll_args(-1)", show=False, id="approval_scroll_up"),
    ]

    class AnsweredAll(Message):
        """Y / N: the same answer for the calls of this reply not asked about yet."""

        def __init__(self, approval: Approval) -> None:
            super().__init__()
            self.approval = approval

    class Done(Message):
        """Nothing left to ask: the app gives focus back to the prompt."""

    class Typed(Message):
        """A key meant for the message box (typed as the call appeared): the app puts it
        there and gives the message box the keyboard."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class Leave(Message):
        """Esc: back to the message box (Esc there comes back)."""

    def __init__(self, root: Path, **kwargs: str) -> None:
        super().__init__(**kwargs)
        self.root = root
        self.queue: list[PendingApproval] = []
        self.reply = ReplyCalls()
        self.mode = "view"  # view | reason | edit
        self.shown_at = 0.0  # when the current call was shown (the guard counts from it)
        self.keys = KeyReader()  # the answer keys' state (a started sequence, typing)
        self._armed_at = 0.0  # when the started sequence began
        self.answering = False  # the user answered the call before this one from here
        self.ignored_key = False  # a key came too soon after this call appeared
        self._shown: str | None = None  # id of the call on screen

    def compose(self) -> ComposeResult:
        yield Static(classes="approval-title")
        with VerticalScroll(classes="approval-queue"):
            yield Static(classes="approval-list")
        yield Static(classes="approval-source")
        with VerticalScroll(classes="approval-args"):
            yield Static(classes="approval-json")
        yield Static(classes="approval-rule")

        yield ArgsEditor(classes="approval-editor", soft_wrap=True, tab_behavior="indent")
        # Docked at the bottom: the answer's controls stay on screen when the rest is cut.
        with Vertical(classes="approval-footer"):
            yield Static(classes="approval-error")
            # s / a / d: the numbered grants, kept on screen with the keys that pick them
            yield ChoiceButtons(classes="approval-choices")
            yield Input(placeholder="Why? (sent to the model; Enter to deny, Esc to go back)",
                        classes="approval-reason")
            yield Static(classes="approval-hint")
            with Vertical(classes="approval-buttons"):  # a grid: as many columns as fit
                for _key, label, action, variant in BUTTONS:
                    key = answer_key(action)  # the key in force ([keys])
                    yield KeyButton(Content.assemble((key, "bold"), f" {label}"),
                                    variant=variant,  # type: ignore[arg-type]
                                    compact=True, name=action, classes=f"approval-{action}")
            with Horizontal(classes="approval-edit-buttons"):
                yield KeyButton("ctrl+s Run with these", variant="success", compact=True,
                                name="run_edited")
                yield KeyButton("esc Back", compact=True, name="back")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        # Every key has a button: the button's name is the action it runs. A click is
        # deliberate (no guard) but still confirms what writes config or covers several calls.
        event.stop()
        name = event.button.name or ""
        if name.startswith("choice-"):
            self.grant(self.confirming or "", int(name.removeprefix("choice-")))
        elif name in ("run_edited", "back"):
            getattr(self, f"action_{name}")()
        elif name:
            self.press(name)

    def on_args_editor_back(self, event: ArgsEditor.Back) -> None:
        event.stop()
        self.action_back()

    def on_resize(self) -> None:
        self._fit_buttons()

    def _fit_buttons(self) -> None:
        """As many button columns as the width allows, so every key stays readable."""
        grid = self.query_one(".approval-buttons")
        widths = [Content(str(b.label)).cell_length + 2 for b in grid.query(KeyButton)]
        grid.styles.grid_size_columns = fit_columns(
            widths, grid.content_region.width or self.content_region.width)


    def on_focus(self) -> None:
        self.keys.forwarding = False  # the keyboard is back: keys answer again
        self._hint()

    def on_blur(self) -> None:
        self._left()

    def on_descendant_blur(self) -> None:
        self._left()

    def _left(self) -> None:
        if not self.has_focus_within:  # the keyboard went elsewhere, not to a child
            self.answering = False
        self._hint()

    @property
    def current(self) -> PendingApproval | None:
        self.queue = [r for r in self.queue if r.open]  # cancelled turns drop theirs
        return self.queue[0] if self.queue else None

    @property
    def waiting(self) -> bool:
        """A call is on screen waiting for an answer."""
        return self.display and self.current is not None

    def push(self, request: PendingApproval) -> None:
        self.queue.append(request)
        if not self.is_mounted:
            return  # mounted after the first frame (KepApp); on_mount shows the queue
        self.display = True
        self._show()

    def on_mount(self) -> None:
        if self.current is not None:
            self.display = True
            self._show()

    def start_reply(self, calls: Sequence[ToolCall]) -> None:
        """The calls of a new model reply (listed while any of them is asked about)."""
        self.reply.start(calls)

    def settle(self, event: ToolCallDecided | ToolFinished) -> None:
        """What became of one of the reply's calls: the list says so. Once every call of the
        reply is decided and none is waiting, the panel goes away."""
        if self.reply.settle(event) and self.is_mounted and self.display:
            if self.current is None and not self.reply.unsettled():
                self._finish()
            else:
                self._draw_list()

    def foresee(self, event: ToolCallForeseen) -> None:
        """What the rules will say about a call of the reply not reached yet: listed."""
        if self.reply.foresee(event) and self.is_mounted and self.display:
            self._draw_list()

    def drop_closed(self) -> None:
        """The turn ended (or was cancelled): nothing more of its reply will be asked."""
        self.reply.clear()
        if self.current is None:
            self._finish()
        else:
            self._draw_list()

    # ---- drawing ----------------------------------------------------------------------

    def _title(self) -> None:
        req = self.current
        title = self.query_one(".approval-title", Static)
        if req is None:
            title.update(Content.styled("Waiting for the next call of this reply…", "dim"))
            return
        more = f"   (+{len(self.queue) - 1} waiting)" if len(self.queue) > 1 else ""
        asks = {"network": " reach ", "sandbox-wall": " write "}.get(req.spec.format)  # sandbox
        what = next(iter(req.call.arguments.values()), "") if asks else ""
        title.update(Content.assemble("Let " if asks else "Run ", (printable_line(
            req.call.name), "bold"), f"{asks}{printable_line(str(what))}?" if asks else "?",
            (more, "dim")))

    def _draw_list(self) -> None:
        req = self.current
        box = self.query_one(".approval-queue")
        listed = len(self.reply.calls) > 1 and (req is None or self.reply.has(req.call.id))
        box.set_class(not listed, "-hidden")  # a class: edit mode's CSS may hide it too
        if listed:
            current = req.call.id if req else None
            self.query_one(".approval-list", Static).update(self.reply.lines(current))
            if current:  # the asked call in view, with the one before it for context
                box.scroll_to(y=max(0, self.reply.index(current) - 1), animate=False)

    def _hint(self) -> None:
        if not self.is_mounted:
            return
        req = self.current
        text: Content | str = ""
        self._draw_choices()
        if req is not None and self.confirming:
            text = Content.styled(self._confirm_text(self.confirming), "bold $text-warning")
        elif req is not None and self.ignored_key and not self.armed:
            text = Content.styled("Key ignored: this call has only just appeared.",
                                  "$text-warning")
        elif req is not None and not self.has_focus_within:
            text = Content.styled("Typing in the message box? Esc there comes here to answer "
                           "(or click a button).", "$text-warning")
        hint = self.query_one(".approval-hint", Static)
        hint.update(text)
        hint.display = bool(text)

    def _show(self) -> None:
        req = self.current
        self.set_class(req is None, "-waiting")
        if req is None:
            if self.display and self.reply.unsettled():
                # The next call of this reply is on its way: keep the keyboard meanwhile.
                self._shown = None
                self._title()
                self._draw_list()
                self._hint()
                return
            self._finish()
            return
        self._title()
        self._draw_list()
        if req.call.id == self._shown:
            return  # already on screen (and perhaps half answered: a reason being typed)
        self._shown = req.call.id
        self.shown_at = time.monotonic()
        self.keys.pending, self.ignored_key = None, False
        # The guard counts from when the call is on screen (the first one waits for the
        # JSON highlighter to load), not from when it arrived.
        self.call_after_refresh(self._on_screen, req.call.id)
        source = shown_source(req.spec.source, self.root)
        self.query_one(".approval-source", Static).update(
            Content.assemble(("from ", "dim"), printable_line(source),
                             (f"  ({req.spec.format})", "dim")))
        pretty = printable(json.dumps(req.call.arguments, indent=2, ensure_ascii=False),
                           marks=True)  # what runs: every direction control shown
        from textual.highlight import highlight  # Pygments: loaded when first needed

        self.query_one(".approval-json", Static).update(with_diff(
            highlight(pretty, language="json"), req.spec, req.call, self.root))
        why = ((("asking again: ", "dim"), f"{req.verdict.again} · {req.verdict.rule}")
               if req.verdict.again else (("asking because ", "dim"), req.verdict.rule))
        self.query_one(".approval-rule", Static).update(Content.assemble(*why))
        self._set_mode("view")
        self._fit_buttons()
        self._hint()

    def _set_mode(self, mode: str) -> None:
        self.mode = mode
        self.set_class(mode == "reason", "-reason")
        self.set_class(mode == "edit", "-edit")
        self._error("")
        if mode == "reason":
            reason = self.query_one(".approval-reason", Input)
            reason.value = ""
            focus_now(reason)
        elif mode == "edit" and (req := self.current):
            editor = self.query_one(".approval-editor", TextArea)
            editor.load_text(json.dumps(req.call.arguments, indent=2, ensure_ascii=False))
            focus_now(editor)
        elif self.has_focus_within:
            focus_now(self)  # back from reason/edit; never taken from the message box here

    def _error(self, text: str) -> None:
        error = self.query_one(".approval-error", Static)
        error.update(Content(text))
        error.display = bool(text)

    # ---- answering --------------------------------------------------------------------

    def _answer(self, approval: Approval) -> None:
        req = self.current
        if req is None:
            return
        self.answering = self.has_focus_within
        req.resolve(approval)
        self._show()

    def _finish(self) -> None:
        self.queue.clear()
        self._shown, self.answering = None, False
        self.keys.reset()
        if self.display:
            self.display = False
            self.post_message(self.Done())

    def action_allow(self) -> None:
        self._answer(Approval(True))

    def action_deny(self) -> None:
        if self.current is not None:
            self._set_mode("reason")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._answer(Approval(False, event.value.strip()))


    def action_edit(self) -> None:
        if self.current is not None:
            self._set_mode("edit")

    def action_run_edited(self) -> None:
        req = self.current
        if req is None or self.mode != "edit":
            return
        problem, value = parse_arguments(self.query_one(".approval-editor", TextArea).text,
                                          req.spec.parameters)
        if problem:
            self._error(f"✗ {problem}")
            return
        edited = None if value == req.call.arguments else value
        self._answer(Approval(True, arguments=edited))

    def action_back(self) -> None:
        if self.mode != "view":
            self._set_mode("view")

    def batch_calls(self, action: str) -> list[ToolCall]:
        """The calls Y / N would answer, as their hint names them: every call of the reply
        not decided yet (N denies even those a rule would allow); Y leaves out those a rule
        will deny (deny wins)."""
        req = self.current
        calls = self.reply.unsettled() if req and self.reply.has(req.call.id) else [
            r.call for r in self.queue]
        if action == "allow_all":
            calls = [c for c in calls if self.reply.foreseen.get(c.id) != "deny"]
        return calls

    def _answer_all(self, approval: Approval) -> None:
        self.answering = self.has_focus_within
        for req in self.queue:
            req.resolve(approval)
        self.post_message(self.AnsweredAll(approval))
        self._show()

    def answer_matching(self, wanted: Callable[[str], bool], approval: Approval) -> None:
        """Resolve queued requests whose call id `wanted` accepts (Y / N arriving late)."""
        for req in self.queue:
            if wanted(req.call.id):
                req.resolve(approval)
        self._show()

    def action_allow_all(self) -> None:
        self._answer_all(Approval(True))

    def action_deny_all(self) -> None:
        self._answer_all(Approval(False))
