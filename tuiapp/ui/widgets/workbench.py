"""The workbench: one tool beside the chat, to run, edit and run again.

It shows the tool's description, its parameters as a form (SchemaForm), and runs it directly
as `kep call` does (tools.direct.run_direct: the same policy decision, the same runner), with
the output streaming, the exit code, the duration and the bytes. Runs are kept per tool
(the app holds the lists), can be re-run, diffed, or sent into the chat as context.

Saving the tool's source (in $EDITOR or the in-app editor) and the reload after it come back
through `entry_changed()`: a broken tool shows its reason at once; with "run on save" on,
the last arguments run again.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, Checkbox, OptionList, Static
from textual.widgets.option_list import Option

from tuiapp.settings.config_types import ApprovalConfig
from tuiapp.tools.check import broken_hint
from tuiapp.tools.direct import DirectRun, run_direct
from tuiapp.tools.runner import Runner
from tuiapp.ui.focus import focus_now
from tuiapp.ui.literal import literal, say
from tuiapp.ui.widgets.functions_panel import short_source
from tuiapp.ui.widgets.run_log import RunLog, printable
from tuiapp.ui.widgets.schema_form import SchemaForm
from tuiapp.vocab.tool_specs import BrokenTool, ToolSpec

Entry = ToolSpec | BrokenTool
KEYS = ("F5 run · F2 cancel · F4 edit · F6 run on save · F7 send to chat · F8 diff · "
        "F9 re-run · F3 close")


def _mtime(source: str) -> int | None:
    try:
        return os.stat(source).st_mtime_ns
    except OSError:
        return None


def _args_text(arguments: dict[str, Any], limit: int = 60) -> str:
    text = json.dumps(arguments, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Workbench(Widget, can_focus=False):
    DEFAULT_CSS = """
    Workbench { width: 1fr; height: 1fr; border-left: solid $primary; padding: 0 1; }
    Workbench #bench-scroll { height: 1fr; }
    Workbench .bench--title { text-style: bold; }
    Workbench .bench--status { color: $text-success; }
    Workbench .bench--status.-broken { color: $text-error; }
    Workbench .bench--keys { color: $text-muted; }
    Workbench #bench-controls { height: auto; }
    Workbench #bench-controls Button { min-width: 8; margin-right: 1; }
    Workbench #bench-log { height: 12; border: round $panel; }
    Workbench #bench-runs { height: auto; max-height: 8; }
    """
    # Its keys (F5 run, F3 close …) are bound on the chat screen (ui/chat_screen.py): they
    # work wherever the keyboard is while the workbench is open.

    class SendToChat(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class EditRequested(Message):
        def __init__(self, path: Path) -> None:
            super().__init__()
            self.path = path

    class Closed(Message):
        pass

    def __init__(self, entry: Entry, runs: list[DirectRun], runner: Runner,
                 approval: Callable[[], ApprovalConfig], *, root: Path | None = None,
                 id: str | None = "workbench") -> None:
        super().__init__(id=id)
        self.root = root
        self.entry = entry
        self.runs = runs  # shared with the app: kept when the workbench closes
        self.runner = runner
        self.approval = approval
        self.run_on_save = False
        self.running = False
        self._seen_mtime = _mtime(entry.source)

    @property
    def source(self) -> str:
        return self.entry.source

    @property
    def tool_name(self) -> str:
        e = self.entry
        return e.name if isinstance(e, ToolSpec) else os.path.basename(e.source)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="bench-scroll"):
            yield Static("", classes="bench--title", markup=False)
            yield Static("", classes="bench--status", markup=False)
            yield Static("", id="bench-desc", markup=False)
            yield Static("Arguments", classes="bench--title")
            with Vertical(id="bench-form-box"):
                yield SchemaForm(self._parameters(), self._initial_args(), id="bench-form")
            with Horizontal(id="bench-controls"):
                yield Button("Run", id="bench-run", variant="primary")
                yield Button("Edit", id="bench-edit")
                yield Button("Send", id="bench-send")
                yield Checkbox("run on save", id="bench-on-save")
            yield Static("", id="bench-result", markup=False)
            yield RunLog(id="bench-log")
            yield Static("Runs", classes="bench--title")
            yield OptionList(id="bench-runs", compact=True)
            yield Static(KEYS, classes="bench--keys")

    def on_mount(self) -> None:
        self._show_entry()
        self._show_runs()
        self.call_after_refresh(self.focus_first)

    def focus_first(self) -> None:
        fields = self.query("#bench-form Input, #bench-form Checkbox, #bench-form Select")
        focus_now(fields.first() if fields else self.query_one("#bench-run"))

    def _parameters(self) -> dict[str, Any]:
        return self.entry.parameters if isinstance(self.entry, ToolSpec) else {}

    def _initial_args(self) -> dict[str, Any]:
        return dict(self.runs[-1].arguments) if self.runs else {}

    # ---- what the tool is -------------------------------------------------------------

    def _show_entry(self) -> None:
        e = self.entry
        title, status, desc = self.query(".bench--title").first(Static), \
            self.query_one(".bench--status", Static), self.query_one("#bench-desc", Static)
        title.update(say("{} · {} · {}", self.tool_name, e.format,
                         short_source(e.source, self.root)))
        if isinstance(e, BrokenTool):
            status.add_class("-broken")
            hint = broken_hint(e.error, e.format)
            status.update(say("✗ broken: {}{}", e.error, f"\nfix: {hint}" if hint else ""))
            desc.update("")
        else:
            status.remove_class("-broken")
            status.update("✔ ok")
            desc.update(literal(e.description or "(no description)"))

    def entry_changed(self, entry: Entry | None) -> None:
        """The registry changed. `entry`: this tool (or its broken source) now; None: gone.
        A changed file counts as a save: its state shows at once, and with run on save the
        last arguments run again."""
        mtime = _mtime(self.source)
        saved = mtime != self._seen_mtime
        self._seen_mtime = mtime
        if entry is None:
            entry = BrokenTool(self.source, self.entry.format,
                               "the tool is gone: its file no longer declares it")
        params_changed = (isinstance(entry, ToolSpec) != isinstance(self.entry, ToolSpec)
                          or (isinstance(entry, ToolSpec) and isinstance(self.entry, ToolSpec)
                              and entry.parameters != self.entry.parameters))
        self.entry = entry
        self._show_entry()
        if params_changed:
            self.run_worker(self._rebuild_form, group="bench-form", exclusive=True)
        if saved and self.run_on_save and isinstance(entry, ToolSpec) and self.runs:
            self.start_run(self.runs[-1].arguments)

    async def _rebuild_form(self) -> None:
        """New parameters after a save: a new form, the values typed so far kept."""
        box = self.query_one("#bench-form-box")
        args: dict[str, Any] = {}
        for old in box.query(SchemaForm):
            args, _ = old.read()
        await box.remove_children()
        await box.mount(SchemaForm(self._parameters(), args or self._initial_args(),
                                   id="bench-form"))

    # ---- running ----------------------------------------------------------------------

    def action_run(self) -> None:
        forms = self.query("#bench-form")
        if not isinstance(self.entry, ToolSpec) or not forms:
            self.start_run({})  # says why not
            return
        args, problem = forms.first(SchemaForm).read()
        if problem:
            self._result(f"not run: {problem}", error=True)
            return
        self.start_run(args)

    def start_run(self, arguments: dict[str, Any]) -> None:
        if not isinstance(self.entry, ToolSpec):
            self._result(f"not run: the tool is broken: {self.entry.error}", error=True)
            return
        if self.running:
            self._result("a run is still going (F2 cancels it)", error=True)
            return
        self.running = True
        self._run(self.entry, dict(arguments))

    def action_cancel(self) -> None:
        """Stop the run: its worker is cancelled, and the runner kills the tool's group."""
        if not self.running:
            self._result("nothing is running", error=True)
            return
        self.workers.cancel_group(self, "bench-run")
        self.running = False
        self._result("cancelled", error=True)

    @work(exclusive=True, group="bench-run", exit_on_error=False)
    async def _run(self, spec: ToolSpec, arguments: dict[str, Any]) -> None:
        log = self.query_one("#bench-log", RunLog)
        log.reset()
        self._result(f"running {spec.name} {_args_text(arguments)} …")
        try:
            run = await run_direct(self.runner, spec, arguments, self.approval(),
                                   log.put_stream)
        finally:
            self.running = False
        self.runs.append(run)
        self._result(f"#{len(self.runs)} {run.summary()}", error=run.status != "ok")
        if run.status in ("ok", "failed", "timed_out", "cancelled") and not run.stdout \
                and not run.stderr:
            log.put(run.result + "\n")
        elif run.result.strip() != run.stdout.strip() and run.status == "ok":
            log.mark("result")
            log.put(run.result + "\n")
        self._show_runs()
        self.post_message(self.RunFinished(run))

    class RunFinished(Message):
        def __init__(self, run: DirectRun) -> None:
            super().__init__()
            self.run = run

    def _result(self, text: str, *, error: bool = False) -> None:
        widget = self.query_one("#bench-result", Static)
        widget.update(Content.styled(printable(text),
                                     "$text-error" if error else "$text-success"))

    # ---- runs -------------------------------------------------------------------------

    def _show_runs(self) -> None:
        runs = self.query_one("#bench-runs", OptionList)
        runs.set_options([Option(Content(printable(
            f"#{i} {r.summary()}  {_args_text(r.arguments)}")), id=str(i))
            for i, r in enumerate(self.runs, 1)])
        if self.runs:
            runs.highlighted = len(self.runs) - 1

    def _selected(self) -> DirectRun | None:
        runs = self.query_one("#bench-runs", OptionList)
        if runs.highlighted is not None and runs.highlighted < len(self.runs):
            return self.runs[runs.highlighted]
        return self.runs[-1] if self.runs else None

    @on(OptionList.OptionSelected, "#bench-runs")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        run = self.runs[int(event.option.id or "1") - 1]
        self.query_one("#bench-form", SchemaForm).set_values(run.arguments)
        self._show_output(run)

    def _show_output(self, run: DirectRun) -> None:
        log = self.query_one("#bench-log", RunLog)
        log.reset()
        log.put(run.stdout or run.result)
        if run.stderr:
            log.mark("stderr")
            log.put(run.stderr)

    def action_rerun(self) -> None:
        run = self._selected()
        if run is None:
            self._result("no earlier run to re-run", error=True)
            return
        self.query_one("#bench-form", SchemaForm).set_values(run.arguments)
        self.start_run(run.arguments)

    def action_diff(self) -> None:
        """The selected run against the latest (or the one before, if the latest is picked)."""
        if len(self.runs) < 2:
            self._result("diff needs two runs", error=True)
            return
        a = self._selected() or self.runs[-2]
        b = self.runs[-1] if a is not self.runs[-1] else self.runs[-2]
        if self.runs.index(a) > self.runs.index(b):
            a, b = b, a  # older first: the diff reads as what changed since
        ia, ib = self.runs.index(a) + 1, self.runs.index(b) + 1
        lines = difflib.unified_diff(
            [f"args: {json.dumps(a.arguments)}", *a.result.splitlines()],
            [f"args: {json.dumps(b.arguments)}", *b.result.splitlines()],
            f"run #{ia}", f"run #{ib}", lineterm="")
        log = self.query_one("#bench-log", RunLog)
        log.reset()
        log.put("\n".join(lines) or f"runs #{ia} and #{ib} gave the same result")
        self._result(f"diff of run #{ia} and run #{ib}")

    def action_send(self) -> None:
        run = self._selected()
        if run is None:
            self._result("no run to send yet", error=True)
            return
        body = run.result if run.status == "ok" else (run.stderr or run.result or run.note)
        text = (f"Result of running the tool `{run.tool}` with {json.dumps(run.arguments)} "
                f"({run.summary()}):\n```\n{body.rstrip()}\n```\n")
        self.post_message(self.SendToChat(text))

    # ---- edit, toggles, close --------------------------------------------------------

    def action_edit(self) -> None:
        if self.source.startswith("mcp:"):
            self._result("an MCP server's tool has no source file here", error=True)
            return
        self.post_message(self.EditRequested(Path(self.source)))

    def action_toggle_run_on_save(self) -> None:
        box = self.query_one("#bench-on-save", Checkbox)
        box.value = not box.value

    @on(Checkbox.Changed, "#bench-on-save")
    def _on_save_changed(self, event: Checkbox.Changed) -> None:
        event.stop()
        self.run_on_save = event.value

    def action_close(self) -> None:
        self.post_message(self.Closed())

    @on(Button.Pressed)
    def _button(self, event: Button.Pressed) -> None:
        event.stop()
        {"bench-run": self.action_run, "bench-edit": self.action_edit,
         "bench-send": self.action_send}[event.button.id or "bench-run"]()
