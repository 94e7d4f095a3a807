"""KepApp's workbench actions (a mixin): open a tool beside the chat, edit it, reload it,
write a new one, run the protocol check.

Runs go through tools.direct.run_direct (the same policy decision as `kep call`); the check
only runs what the registry listed (discovery is where the project's code is gated).
"""

from __future__ import annotations

import os
import shlex
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work

from tuiapp.security.sandbox import spawn
from tuiapp.ui.focus import focus_now
from tuiapp.ui.literal import say
from tuiapp.vocab.tool_specs import BrokenTool, ToolSpec

# The workbench's modules load when a tool is first opened, not at kep's start.
if TYPE_CHECKING:
    from tuiapp.tools.direct import DirectRun
    from tuiapp.tools.runner import Runner
    from tuiapp.ui.app_api import KepApp
    from tuiapp.ui.screens.tool_editor import ToolSaved
    from tuiapp.ui.widgets.functions_panel import FunctionsPanel
    from tuiapp.ui.widgets.workbench import Workbench

Entry = ToolSpec | BrokenTool


def editor_command() -> list[str] | None:
    """$VISUAL, else $EDITOR, split as a shell would; None when neither is set."""
    for var in ("VISUAL", "EDITOR"):
        value = os.environ.get(var, "").strip()
        if value:
            try:
                return shlex.split(value)
            except ValueError:
                return None
    return None


class WorkbenchActions:
    """Mixed into KepApp (which provides ws, functions, show_tools, notify …)."""

    _bench_runs: dict[str, list[DirectRun]]
    _bench_runner: Runner | None = None

    def _app(self) -> KepApp:
        return self  # type: ignore[return-value]

    def bench(self) -> Workbench | None:
        found = self._app().query("#workbench")
        return found.first() if found else None  # type: ignore[return-value]

    # ---- opening ----------------------------------------------------------------------

    def on_functions_panel_tool_chosen(self, message: FunctionsPanel.ToolChosen) -> None:
        self.open_workbench(message.entry)

    def open_workbench(self, entry: Entry) -> None:
        from tuiapp.ui.widgets.workbench import Workbench

        app = self._app()
        if not hasattr(self, "_bench_runs"):
            self._bench_runs = {}
        if self._bench_runner is None:
            from tuiapp.tools.direct import prune_spool

            self._bench_runner = app.ws.runner("workbench")
            prune_spool(self._bench_runner.spool_dir)  # bounded across kep runs
        key = entry.name if isinstance(entry, ToolSpec) else entry.source
        bench = Workbench(entry, self._bench_runs.setdefault(key, []), self._bench_runner,
                          lambda: app.ws.config.approval, root=app.ws.root)
        app.run_worker(partial(self._swap_bench, bench), group="bench-open", exclusive=True)

    async def _swap_bench(self, bench: Workbench) -> None:
        """One workbench at a time: the old one is gone before the new one (same id) comes."""
        app = self._app()
        old = self.bench()
        if old is not None:
            await old.remove()
        await app.query_one("#body").mount(bench, after=app.query_one("#chat"))
        app.fit_panels()

    def open_tool(self, name: str) -> bool:
        spec = self._app().ws.registry.tools.get(name)
        if spec is None:
            return False
        self.open_workbench(spec)
        return True

    def bench_sync(self) -> None:
        """After a registry change: the open tool as it is now (a save shows at once)."""
        bench = self.bench()
        if bench is None:
            return
        registry = self._app().ws.registry
        now: Entry | None = None
        if isinstance(bench.entry, ToolSpec):
            spec = registry.tools.get(bench.entry.name)
            now = spec if spec is not None and spec.source == bench.source else None
        if now is None:
            same = [e for e in registry.entries() if e.source == bench.source]
            named = [e for e in same if isinstance(e, ToolSpec)]
            broken = [e for e in same if isinstance(e, BrokenTool)]
            now = broken[0] if broken else (named[0] if named else None)
        bench.entry_changed(now)

    # ---- the workbench's requests -----------------------------------------------------

    def on_workbench_closed(self) -> None:
        bench = self.bench()
        if bench is not None:
            bench.remove()
        self._app().call_after_refresh(self._app().fit_panels)
        focus_now(self._app().query_one("#prompt"))

    def on_workbench_send_to_chat(self, message: Workbench.SendToChat) -> None:
        prompt = self._app().query_one("#prompt")
        prompt.insert(message.text)  # type: ignore[attr-defined]
        focus_now(prompt)
        self._app().notify("The run's result is in the prompt: add your question and send.",
                           title="Workbench", timeout=4)

    def on_workbench_edit_requested(self, message: Workbench.EditRequested) -> None:
        self.edit_source(message.path)

    def edit_source(self, path: Path) -> None:
        from textual.app import SuspendNotSupported

        app = self._app()
        command = editor_command()
        if command is not None:
            try:
                with app.suspend():
                    spawn.run_unconfined([*command, str(path)], "editor")
            except SuspendNotSupported:
                command = None  # no terminal to hand over: edit in the app instead
            except OSError as e:
                app.notify(say("could not start {}: {}; editing in kep",
                               command[0], e.strerror or e),
                           title="Edit", severity="warning")
                command = None
        if command is None:
            from tuiapp.ui.screens.tool_editor import ToolEditor

            app.push_screen(ToolEditor(path),
                            lambda _saved: app.call_after_refresh(self._refocus_bench))
            return
        self.reload_source(path)
        app.call_after_refresh(self._refocus_bench)

    def _refocus_bench(self) -> None:
        """Back from the editor: the keyboard returns to the workbench, not the prompt."""
        bench = self.bench()
        if bench is not None:
            bench.focus_first()

    def on_tool_saved(self, message: ToolSaved) -> None:
        self.reload_source(message.path)

    @work(group="bench-reload", exit_on_error=False)
    async def reload_source(self, path: Path) -> None:
        """Declare the saved file again now (not waiting for the watcher's debounce)."""
        app = self._app()
        try:
            await app.ws.registry.refresh([path])
        except Exception as e:  # a registry bug must not take the chat down
            app.notify(say("could not reload: {}", e), severity="error")
        app.show_tools()

    # ---- new function, check ----------------------------------------------------------

    def action_new_function(self) -> None:
        from tuiapp.ui.screens.new_function import NewFunction

        app = self._app()
        app.push_screen(NewFunction(app.ws.root), self._created)

    @work(group="bench-new", exit_on_error=False)
    async def _created(self, path: Path | None) -> None:
        if path is None:
            return
        app = self._app()
        app.notify(say("Wrote {}", path), title="New function", timeout=6)
        await app.ws.registry.refresh([path])
        app.show_tools()
        if not self.open_tool(path.name):
            broken = [e for e in app.ws.registry.entries() if e.source == str(path)]
            if broken:
                self.open_workbench(broken[0])

    @work(exclusive=True, group="bench-check", exit_on_error=False)
    async def action_check_tools(self) -> None:
        from tuiapp.tools.check import check_entries, counts

        app = self._app()
        registry = app.ws.registry
        app.notify("Checking tools…", title="Check", timeout=2)
        findings = await check_entries(registry.entries(), registry.context(),
                                       approval=app.ws.config.approval)
        app.functions.update_findings(findings)
        app.functions.remove_class("-hidden")
        app.fit_panels()
        n: dict[str, Any] = counts(findings)
        app.notify(say("{} errors, {} warnings, {} info", n['error'], n['warning'], n['info']),
                   title="Check", severity="error" if n["error"] else "information")
