"""Inline approval, above the prompt (no modal: the transcript stays in view).

Shows the tool, where it comes from, its arguments as highlighted JSON and the rule that made
kep ask. Keys: y allow once · n deny (optional reason, sent to the model) · a always allow ·
d always deny · e edit the arguments · Y / N all pending. Each key has a button too.
Requests queue in order; the panel resolves each request's Future exactly once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Input, Static, TextArea

from tuiapp.core.conversation import Approval
from tuiapp.core.display import printable, printable_line
from tuiapp.tools.schema import arguments_error
from tuiapp.ui.bridge import PendingApproval

# (key, label, action, variant). Labels stay short: the row must fit beside the tool panes.
BUTTONS = (("y", "allow", "allow", "success"), ("n", "deny…", "deny", "error"),
           ("a", "always", "always_allow", "default"), ("d", "never", "always_deny", "default"),
           ("e", "edit", "edit", "default"), ("Y", "all", "allow_all", "default"),
           ("N", "none", "deny_all", "default"))


class ApprovalPanel(Vertical, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(key, action, label, show=False) for key, label, action, _ in BUTTONS),
        Binding("escape", "back", "back", show=False),
        Binding("ctrl+s", "run_edited", "run edited", show=False),
    ]

    class RuleRequested(Message):
        """a / d: the app writes an exact-name rule to the project's kep.toml."""

        def __init__(self, tool: str, action: str) -> None:
            super().__init__()
            self.tool, self.action = tool, action

    class AnsweredAll(Message):
        """Y / N: the same answer for the calls of this reply not asked about yet."""

        def __init__(self, approval: Approval) -> None:
            super().__init__()
            self.approval = approval

    class Done(Message):
        """Nothing left to ask: the app gives focus back to the prompt."""

    def __init__(self, root: Path, **kwargs: str) -> None:
        super().__init__(**kwargs)
        self.root = root
        self.queue: list[PendingApproval] = []
        self.mode = "view"  # view | reason | edit

    def compose(self) -> ComposeResult:
        yield Static(classes="approval-title")
        yield Static(classes="approval-source")
        with VerticalScroll(classes="approval-args"):
            yield Static(classes="approval-json")
        yield Static(classes="approval-rule")
        yield Input(placeholder="Why? (sent to the model; Enter to deny, Esc to go back)",
                    classes="approval-reason")
        yield TextArea(classes="approval-editor", soft_wrap=True, tab_behavior="indent")
        yield Static(classes="approval-error")
        with Horizontal(classes="approval-buttons"):
            for key, label, action, variant in BUTTONS:
                yield Button(Content.assemble((key, "bold"), f" {label}"),
                             variant=variant,  # type: ignore[arg-type]
                             compact=True, name=action, classes=f"approval-{action}")
        with Horizontal(classes="approval-edit-buttons"):
            yield Button("ctrl+s Run with these arguments", variant="success", compact=True,
                         name="run_edited")
            yield Button("esc Back", compact=True, name="back")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        # Every key has a button: the button's name is the action it runs.
        event.stop()
        if event.button.name:
            getattr(self, f"action_{event.button.name}")()

    @property
    def current(self) -> PendingApproval | None:
        self.queue = [r for r in self.queue if r.open]  # cancelled turns drop theirs
        return self.queue[0] if self.queue else None

    def push(self, request: PendingApproval) -> None:
        self.queue.append(request)
        if not self.is_mounted:
            return  # mounted after the first frame (KepApp); on_mount shows the queue
        if len(self.queue) == 1:
            self._show()
        else:
            self._title()
        self.display = True
        self.focus()

    def on_mount(self) -> None:
        if self.current is not None:
            self._show()
            self.display = True
            self.focus()

    def drop_closed(self) -> None:
        if self.current is None:
            self._finish()

    # ---- drawing ----------------------------------------------------------------------

    def _title(self) -> None:
        req = self.current
        if req is None:
            return
        more = f"   (+{len(self.queue) - 1} waiting)" if len(self.queue) > 1 else ""
        self.query_one(".approval-title", Static).update(Content.assemble(
            "Run ", (printable_line(req.call.name), "bold"), "?", (more, "dim")))

    def _show(self) -> None:
        req = self.current
        if req is None:
            self._finish()
            return
        self._title()
        source = req.spec.source
        try:
            source = str(Path(source).relative_to(self.root))
        except ValueError:
            pass
        self.query_one(".approval-source", Static).update(
            Content.assemble(("from ", "dim"), printable_line(source),
                             (f"  ({req.spec.format})", "dim")))
        pretty = printable(json.dumps(req.call.arguments, indent=2, ensure_ascii=False))
        from textual.highlight import highlight  # Pygments: loaded when first needed

        self.query_one(".approval-json", Static).update(highlight(pretty, language="json"))
        why = ((("asking again: ", "dim"), f"{req.verdict.again} · {req.verdict.rule}")
               if req.verdict.again else (("asking because ", "dim"), req.verdict.rule))
        self.query_one(".approval-rule", Static).update(Content.assemble(*why))
        self._set_mode("view")

    def _set_mode(self, mode: str) -> None:
        self.mode = mode
        self.set_class(mode == "reason", "-reason")
        self.set_class(mode == "edit", "-edit")
        self._error("")
        if mode == "reason":
            reason = self.query_one(".approval-reason", Input)
            reason.value = ""
            reason.focus()
        elif mode == "edit" and (req := self.current):
            editor = self.query_one(".approval-editor", TextArea)
            editor.load_text(json.dumps(req.call.arguments, indent=2, ensure_ascii=False))
            editor.focus()
        else:
            self.focus()

    def _error(self, text: str) -> None:
        error = self.query_one(".approval-error", Static)
        error.update(Content(text))
        error.display = bool(text)

    # ---- answering --------------------------------------------------------------------

    def _answer(self, approval: Approval, *, same_tool: bool = False) -> None:
        req = self.current
        if req is None:
            return
        req.resolve(approval)
        if same_tool:  # a rule now covers the others waiting for this tool
            for other in self.queue[1:]:
                if other.call.name == req.call.name:
                    other.resolve(approval)
        self._show()

    def _finish(self) -> None:
        self.queue.clear()
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

    def action_always_allow(self) -> None:
        if req := self.current:
            self.post_message(self.RuleRequested(req.call.name, "allow"))
            self._answer(Approval(True), same_tool=True)

    def action_always_deny(self) -> None:
        if req := self.current:
            self.post_message(self.RuleRequested(req.call.name, "deny"))
            self._answer(Approval(False, "the user always denies this tool"), same_tool=True)

    def action_edit(self) -> None:
        if self.current is not None:
            self._set_mode("edit")

    def action_run_edited(self) -> None:
        req = self.current
        if req is None or self.mode != "edit":
            return
        problem, value = _parse_arguments(self.query_one(".approval-editor", TextArea).text,
                                          req.spec.parameters)
        if problem:
            self._error(f"✗ {problem}")
            return
        edited = None if value == req.call.arguments else value
        self._answer(Approval(True, arguments=edited))

    def action_back(self) -> None:
        if self.mode != "view":
            self._set_mode("view")

    def _answer_all(self, approval: Approval) -> None:
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


def _parse_arguments(text: str, parameters: dict[str, object]) -> tuple[str | None, dict]:
    """Edited arguments → (problem, value). JSON first, then the tool's schema."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        return f"not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})", {}
    if not isinstance(value, dict):
        return f"arguments must be a JSON object, not {type(value).__name__}", {}
    problem = arguments_error(parameters, value)  # type: ignore[arg-type]
    return (f"does not match the tool's schema: {problem}" if problem else None), value
