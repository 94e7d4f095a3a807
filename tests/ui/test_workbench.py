"""The workbench loop in the real app: New function, fill the form, Run, edit in the in-app
editor, save, run-on-save shows the new output, and the offline model calls the tool."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Checkbox, Input, Log, Select, Static, TextArea
from tui_helpers import send, until, wait_approval, wait_idle

from tuiapp.project import config as project_config
from tuiapp.project.workspace import Workspace
from tuiapp.ui.app import make_app
from tuiapp.ui.screens.new_function import NewFunction
from tuiapp.ui.screens.tool_editor import ToolEditor
from tuiapp.ui.widgets.schema_form import SchemaForm
from tuiapp.ui.widgets.workbench import Workbench
from tuiapp.vocab.tool_specs import ToolSpec


@pytest.fixture
def proj(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (project / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    return project


def log_text(bench: Workbench) -> str:
    return "\n".join(bench.query_one("#bench-log", Log).lines)


def result_line(bench: Workbench) -> str:
    return str(bench.query_one("#bench-result", Static).render())


@pytest.mark.slow
async def test_the_whole_loop(proj: Path) -> None:
    app = make_app(Workspace(project_config.load(proj)), model="offline")
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        # New function, from the palette.
        await pilot.press("ctrl+p")
        await pilot.press(*"New function")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, NewFunction), what="name prompt")
        name_box = app.screen.query_one("#new-name", Input)
        name_box.value = "../evil"
        await pilot.press("enter")
        await pilot.pause()
        assert "invalid name" in str(app.screen.query_one("#new-error", Static).render())
        name_box.value = "greet"
        await pilot.press("enter")
        path = proj / "prompts" / "functions" / "greet"
        await until(pilot, lambda: app.bench() is not None
                    and isinstance(app.bench().entry, ToolSpec)
                    and bool(app.bench().query("#bench-desc")), what="the workbench")
        bench = app.bench()
        assert bench is not None and path.is_file()
        desc = bench.query_one("#bench-desc", Static)
        await until(pilot, lambda: "Echo a message back" in str(desc.render()), what="desc")
        # Fill the form and Run (F5).
        form = bench.query_one(SchemaForm)
        message = form.query_one("#field-0", Input)
        message.focus()
        await pilot.press(*"hello")
        await pilot.press("f5")
        await until(pilot, lambda: len(bench.runs) == 1 and not bench.running, what="run 1")
        assert bench.runs[0].arguments == {"message": "hello", "shout": False}
        assert "hello" in log_text(bench) and "exit 0" in result_line(bench)
        assert bench.runs[0].bytes == len("hello\n")
        # Run on save, then the in-app editor: change the output and save.
        await pilot.press("f6")
        assert bench.query_one("#bench-on-save", Checkbox).value
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, ToolEditor), what="the editor")
        area = app.screen.query_one(TextArea)
        assert area.language == "python"
        old = "return message.upper() if shout else message"
        row = next(i for i, line in enumerate(area.text.splitlines()) if old in line)
        col = area.text.splitlines()[row].index(old)
        area.replace('return "edited: " + message', (row, col), (row, col + len(old)))
        await pilot.press("ctrl+s")
        await until(pilot, lambda: len(bench.runs) == 2 and not bench.running,
                    what="run on save")
        assert "edited: hello" in log_text(bench)
        assert path.stat().st_mode & 0o111  # the save kept the exec bit
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ToolEditor), what="editor closed")
        # Diff the two runs; send the last one to the chat.
        bench.action_diff()
        await pilot.pause()
        assert "+edited: hello" in log_text(bench) and "-hello" in log_text(bench)
        await pilot.press("f7")
        await pilot.pause()
        prompt = app.query_one("#prompt", TextArea)
        assert prompt.has_focus and "edited: hello" in prompt.text and "`greet`" in prompt.text
        prompt.load_text("")
        # The offline model calls the edited tool.
        await send(pilot, 'greet {"message": "model"}')
        panel = await wait_approval(pilot)
        assert panel.current is not None
        await pilot.press("y")
        await wait_idle(pilot)
        tool_results = [m.content for m in app.chat.history if m.role == "tool"]
        assert any("edited: model" in str(c) for c in tool_results), tool_results


async def test_a_save_that_breaks_the_tool_shows_the_reason_at_once(proj: Path) -> None:
    path = proj / "prompts" / "functions" / "greet"
    from tuiapp.tools.templates import create

    create(proj, "greet")
    app = make_app(Workspace(project_config.load(proj)), model="offline")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        assert app.open_tool("greet")
        await pilot.pause()
        await pilot.pause()
        bench = app.bench()
        assert bench is not None
        bench.action_edit()
        await until(pilot, lambda: isinstance(app.screen, ToolEditor), what="the editor")
        area = app.screen.query_one(TextArea)
        area.replace("def broken(:\n", (1, 0), (1, 0))  # a syntax error after the #! line
        await pilot.press("ctrl+s", "escape")
        status = bench.query_one(".bench--status", Static)
        await until(pilot, lambda: "broken" in str(status.render()), what="broken shown")
        assert "fix:" in str(status.render())
        assert path.stat().st_mode & 0o111
        bench.action_run()
        await pilot.pause()
        assert "not run" in result_line(bench) and bench.runs == []


async def test_form_types_bounds_enums_json_and_required(proj: Path) -> None:
    params = {"type": "object", "required": ["n", "tags"], "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 5, "description": "count"},
        "ratio": {"type": "number", "default": 0.5},
        "mode": {"type": "string", "enum": ["fast", "slow"], "default": "slow"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "opts": {"type": "object"},
        "flag": {"type": "boolean", "default": True}}}
    from textual.app import App, ComposeResult

    class FormApp(App[None]):
        def compose(self) -> ComposeResult:
            yield SchemaForm(params)

    app = FormApp()
    async with app.run_test(size=(80, 40)) as pilot:
        form = app.query_one(SchemaForm)
        labels = [str(w.render()) for w in form.query("Label")]
        assert "n *  (integer [1..5])" in labels and "tags *  (array)" in labels
        assert form.query_one("#field-1", Input).value == "0.5"
        assert form.query_one("#field-2", Select).value == 1
        assert form.query_one("#field-5", Checkbox).value is True
        assert form.read() == ({}, "n: required")
        form.query_one("#field-0", Input).value = "9"
        assert form.read()[1] == "n: must be ≤ 5"
        form.query_one("#field-0", Input).value = "3"
        form.query_one("#field-3", Input).value = '{"not": "a list"}'
        assert form.read()[1] == "tags: expected a JSON array"
        form.query_one("#field-3", Input).value = '["a", "b"'
        assert form.read()[1].startswith("tags: not valid JSON")
        form.query_one("#field-3", Input).value = '["a",\t"b"]'
        args, problem = form.read()
        assert problem is None
        assert args == {"n": 3, "ratio": 0.5, "mode": "slow", "tags": ["a", "b"], "flag": True}
        form.set_values({"n": 2, "mode": "fast", "tags": [], "flag": False})
        await pilot.pause()
        assert form.read() == ({"n": 2, "mode": "fast", "tags": [], "flag": False}, None)


async def test_a_save_outside_kep_reruns_and_escapes_are_shown_not_obeyed(
        proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tuiapp.tools.templates import create

    path = create(proj, "greet").path
    monkeypatch.setenv("EDITOR", "true")  # headless: cannot suspend, falls back to kep's editor
    app = make_app(Workspace(project_config.load(proj)), model="offline")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        assert app.open_tool("greet")
        await until(pilot, lambda: app.bench() is not None and app.bench().query("#field-0"),
                    what="the workbench")
        bench = app.bench()
        bench.query_one("#field-0", Input).value = "a\x1b[2Jb"
        bench.action_toggle_run_on_save()
        bench.action_run()
        await until(pilot, lambda: len(bench.runs) == 1 and not bench.running, what="run 1")
        assert "a\\x1b[2Jb" in log_text(bench) and "\x1b" not in log_text(bench)
        # Another editor saves the file; the reload (the watcher's) shows the new output.
        text = path.read_text().replace("return message.upper() if shout else message",
                                        'return "v2 " + message')
        path.write_text(text)
        app.refresh_tools()
        await until(pilot, lambda: len(bench.runs) == 2 and not bench.running, what="rerun")
        assert "v2 a" in log_text(bench)
        bench.action_edit()
        await until(pilot, lambda: isinstance(app.screen, ToolEditor), what="kep's editor")


@pytest.mark.slow
async def test_enter_on_a_broken_tool_and_the_check_from_the_panel(proj: Path) -> None:
    from tuiapp.tools.templates import create

    create(proj, "greet")
    bad = proj / "prompts" / "functions" / "bad"
    bad.write_text("#!/bin/sh\necho '{}'\n")
    bad.chmod(0o755)
    app = make_app(Workspace(project_config.load(proj)), model="offline")
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        app.action_toggle_functions()
        await pilot.pause()
        listing = app.functions.query_one("OptionList")
        listing.focus()
        listing.highlighted = 1  # the broken source (groups with a broken entry come first)
        await pilot.press("enter")
        await until(pilot, lambda: app.bench() is not None, what="the workbench")
        status = app.bench().query_one(".bench--status", Static)
        await until(pilot, lambda: "broken" in str(status.render()), what="the reason")
        assert "JSON" in str(status.render()) or "array" in str(status.render())
        assert "fix:" in str(status.render())
        listing.focus()
        await pilot.pause(0.6)  # (a letter right after a focus change is typing: ui/focus.py)
        await pilot.press("c")  # the check, from the panel
        summary = app.functions.query_one(".functions-panel--summary", Static)
        await until(pilot, lambda: "check:" in str(summary.render()), what="the check")
        assert "check: 1 error" in str(summary.render())


async def test_a_2mb_line_and_500_parameters_stay_bounded(proj: Path) -> None:
    import json
    import time

    props = {f"p{i}": {"type": "string", "description": f"parameter {i}"} for i in range(500)}
    defs = json.dumps([{"name": "flood", "description": "Print two megabytes on one line.",
                        "parameters": {"type": "object", "properties": props}}])
    tool = proj / "prompts" / "functions" / "flood"
    tool.write_text("#!/bin/sh\nif [ \"$1\" = --list-functions ]; then echo '" + defs +
                    "'; exit; fi\ncat >/dev/null\nhead -c 2000000 /dev/zero | tr '\\0' x\n")
    tool.chmod(0o755)
    app = make_app(Workspace(project_config.load(proj)), model="offline")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        t0 = time.perf_counter()
        assert app.open_tool("flood")
        await until(pilot, lambda: app.bench() is not None
                    and bool(app.bench().query("#field-extra")), what="the form")
        bench = app.bench()
        assert time.perf_counter() - t0 < 10
        assert len(bench.query("SchemaForm Input")) == 41  # 40 fields + "more arguments"
        bench.query_one("#field-0", Input).value = "first"
        bench.query_one("#field-extra", Input).value = '{"p499": "last", "p0": "ignored"}'
        assert bench.query_one(SchemaForm).read() == ({"p499": "last", "p0": "first"}, None)
        started = time.perf_counter()
        bench.action_run()
        await until(pilot, lambda: len(bench.runs) == 1 and not bench.running, what="run",
                    timeout=30)
        await pilot.pause()
        assert bench.runs[0].bytes == 2_000_000 and bench.runs[0].status == "ok"
        lines = bench.query_one("#bench-log", Log).lines
        assert max(len(line) for line in lines) <= 2000
        assert any("output cut at 256 KiB" in line for line in lines[-3:])
        assert time.perf_counter() - started < 15


async def test_opening_tools_one_after_another_keeps_one_workbench_and_their_runs(
        proj: Path) -> None:
    from tuiapp.tools.templates import create

    create(proj, "one")
    create(proj, "two", lang="bash")
    app = make_app(Workspace(project_config.load(proj)), model="offline")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        for name in ("one", "two", "one", "one"):
            old = app.bench()
            assert app.open_tool(name)
            await until(pilot, lambda n=name, o=old: app.bench() not in (None, o)
                        and app.bench().tool_name == n and app.bench().query("#field-0"),
                        what=name)
            bench = app.bench()
            before = len(bench.runs)
            bench.query_one("#field-0", Input).value = f"hi {name}"
            bench.action_run()
            await until(pilot, lambda b=bench, n=before: not b.running and len(b.runs) > n,
                        what="run")
            await pilot.pause()
        assert len(app.query(Workbench)) == 1
        assert [r.result.strip() for r in app.bench().runs] == ["hi one"] * 3
        app.bench().action_close()
        await pilot.pause()
        assert app.bench() is None


@pytest.mark.usefixtures("unsandboxed")  # reads the pid from outside
async def test_f2_cancels_a_hanging_run_and_its_process_goes(proj: Path) -> None:
    import os

    tool = proj / "prompts" / "functions" / "hang"
    tool.write_text("#!/bin/sh\nif [ \"$1\" = --list-functions ]; then echo '[{\"name\": "
                    "\"hang\", \"description\": \"Hang for a long time.\", \"parameters\": "
                    "{\"type\": \"object\", \"properties\": {}}}]'; exit; fi\n"
                    "cat >/dev/null; echo $$; exec sleep 60\n")
    tool.chmod(0o755)
    app = make_app(Workspace(project_config.load(proj)), model="offline")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        assert app.open_tool("hang")
        await until(pilot, lambda: app.bench() is not None
                    and bool(app.bench().query("#bench-run")), what="the workbench")
        bench = app.bench()
        bench.query_one("#bench-run").focus()
        await pilot.press("f5")
        await until(pilot, lambda: log_text(bench).strip().isdigit(), what="the pid")
        pid = int(log_text(bench).strip())
        await pilot.press("f5")
        assert "still going" in result_line(bench)
        await pilot.press("f2")
        assert "cancelled" in result_line(bench)

        def gone() -> bool:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            return False

        await until(pilot, gone, what="the tool's process to go", timeout=10)
        assert not bench.running
