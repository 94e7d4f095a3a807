"""A `!` line: the command runs as the user typed it, through kep's `execcmd` and the rules
(policy.decide_direct, as `kep call execcmd`: the user typed it, so `ask` is yes, and a deny
rule still stops it), in the sandbox like every tool. Its output streams into a tool pane; a
block in the transcript then offers to add the output to the next message."""

from __future__ import annotations

import os
from functools import partial
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Static

from tuiapp.security import policy
from tuiapp.security.display import printable
from tuiapp.tools.runner import Runner
from tuiapp.ui.literal import literal, say
from tuiapp.vocab.events import Event, ToolCallRequested, ToolFinished
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

if TYPE_CHECKING:
    from tuiapp.ui.app_api import KepApp

TOOL = "execcmd"
PREVIEW_LINES = 5
ATTACH_CAP = 64 * 1024  # characters of output added to a message (the pane has it all)
_runners: dict[str, Runner] = {}  # call id → the runner of a `!` line still running


def run_line(app: KepApp, command: str) -> None:
    """Decide, then run, in the background (once the tools are listed); a refusal is one
    line (nothing ran)."""
    app.run_worker(partial(_decide, app, command), group="shell-line", exit_on_error=False)


async def _decide(app: KepApp, command: str) -> None:
    await app.tools_ready.wait()  # execcmd is listed, the panes are mounted
    spec = app.ws.registry.tools.get(TOOL)
    if spec is None:
        app.notify(say("! needs the {} tool, and it is not listed (kep.toml [tools] builtins?).",
                       TOOL), title="Shell", severity="warning", timeout=10)
        return
    call = ToolCall("shell-" + os.urandom(4).hex(), TOOL, {"cmd": command})
    verdict = policy.decide_direct(call, app.ws.config.approval, os.environ, spec=spec)
    if verdict.action == "deny":
        app.notify(say("! {}: denied by {}. Nothing was run.", command, verdict.why()),
                   title="Shell", severity="warning", timeout=12)
        return
    await _run(app, spec, call)


def _runner(app: KepApp) -> Runner:
    """One runner for the app's `!` lines (its spool pruned as the workbench's is)."""
    runner: Runner | None = getattr(app, "_shell_runner", None)
    if runner is None:
        from tuiapp.tools.direct import prune_spool

        runner = app.ws.runner("shell-lines")
        prune_spool(runner.spool_dir)
        app._shell_runner = runner  # type: ignore[attr-defined]
    return runner


async def _run(app: KepApp, spec: ToolSpec, call: ToolCall) -> None:
    runner = _runners[call.id] = _runner(app)
    panes = app.panes

    def emit(event: Event) -> None:
        panes.handle(event)

    emit(ToolCallRequested(call, spec.source, spec.format))
    if not app.narrow:
        panes.remove_class("-hidden")
        app.fit_panels()
    try:
        outcome = await runner.run(spec, call, emit)
    finally:
        _runners.pop(call.id, None)
    await app.query_one("#transcript").add(ShellResult(call.arguments["cmd"], outcome.finished,
                                                    outcome.stdout + outcome.stderr))


def cancel(call_id: str) -> bool:
    """A pane's `c` on a `!` line's pane."""
    runner = _runners.get(call_id)
    return runner is not None and runner.cancel(call_id)


def attachment(command: str, output: str) -> str:
    """The output as text for a message: fenced, with the command line, bounded, and with
    nothing a terminal would act on (the display edge)."""
    shown = printable(output, drop_escapes=True)
    if len(shown) > ATTACH_CAP:
        shown = shown[:ATTACH_CAP] + f"\n… ({len(shown) - ATTACH_CAP:,} more characters)"
    fence = "```"
    while fence in shown:
        fence += "`"
    return f"{fence}\n$ {printable(command, drop_escapes=True)}\n{shown.rstrip()}\n{fence}\n"


class ShellResult(Vertical):
    """The finished `!` line in the transcript: what ran, how it ended, and the offer."""

    DEFAULT_CSS = """
    ShellResult { height: auto; margin: 0 1 1 1; padding: 0 1; border-left: thick $accent; }
    ShellResult Horizontal { height: auto; }
    ShellResult .shell-output { color: $text-muted; }
    ShellResult Button { margin-right: 1; }
    """
    def __init__(self, command: str, finished: ToolFinished, output: str) -> None:
        super().__init__()
        self.command, self.finished, self.output = command, finished, output

    def compose(self) -> ComposeResult:
        fin = self.finished
        code = "-" if fin.exit_code is None else str(fin.exit_code)
        lines = self.output.count("\n") + (not self.output.endswith("\n") and bool(self.output))
        yield Static(say("! {}", self.command), classes="shell-command")
        tail = self.output.rstrip("\n").split("\n")[-PREVIEW_LINES:]
        if self.output.strip():  # the end of it here too (a narrow screen hides the panes)
            yield Static(literal("\n".join(line[:200] for line in tail)),
                         classes="shell-output")
        yield Static(say("{} · exit {} · {} line{} of output (in the tool pane)", fin.status,
                         code, lines, "s" * (lines != 1)), classes="shell-status")
        with Horizontal():
            yield Button("Add output to the message", id="shell-attach", compact=True)
            yield Button("Dismiss", id="shell-dismiss", compact=True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "shell-attach":
            add_to_prompt(self.app, attachment(self.command, self.output))  # type: ignore[arg-type]
        self.query_one(Horizontal).remove()


def add_to_prompt(app: KepApp, text: str) -> None:
    """The output goes into the message box, before what is typed there."""
    from tuiapp.ui.focus import focus_now

    prompt = app.query_one("#prompt")
    prompt.move_cursor((0, 0))
    prompt.insert(text)
    prompt.move_cursor(prompt.document.end)
    focus_now(prompt)
    app.notify(literal("The output is in the message box: add your words and send."),
               title="Shell", timeout=4)
