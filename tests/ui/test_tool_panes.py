"""Tool panes: live stdout/stderr, status line, last-N-lines cap, cancel and full-output keys."""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult
from textual.pilot import Pilot
from tui_helpers import until

from tuiapp.ui.screens.output_viewer import OpensOutputViewer, OutputViewer
from tuiapp.ui.widgets.output_log import LINE_CAP, OutputLog
from tuiapp.ui.widgets.tool_panes import ToolPanes, status_text
from tuiapp.vocab.events import (
    ToolCallDecided,
    ToolCallRequested,
    ToolCallStarted,
    ToolFinished,
    ToolOutput,
)
from tuiapp.vocab.messages import ToolCall


class PanesApp(OpensOutputViewer, App[None]):
    def __init__(self, max_lines: int = 100) -> None:
        super().__init__()
        self.max_lines = max_lines
        self.cancelled: list[str] = []

    def compose(self) -> ComposeResult:
        yield ToolPanes(self.max_lines)

    def on_tool_panes_cancel_requested(self, message: ToolPanes.CancelRequested) -> None:
        self.cancelled.append(message.call_id)


def start(panes: ToolPanes, call_id: str = "c1", name: str = "shout", spool: str = "") -> None:
    panes.handle(ToolCallRequested(ToolCall(call_id, name, {"file": "notes.txt"}), "x", "keprompt"))
    panes.handle(ToolCallStarted(call_id, name, spool))


async def settle(pilot: Pilot[None], panes: ToolPanes) -> None:
    """Let the newest pane finish mounting and become the visible tab."""
    for _ in range(200):
        await pilot.pause()
        newest = panes.newest()
        if newest is not None and panes.active_pane() is newest:
            return
    raise AssertionError("the newest pane never became active")


def status_of(panes: ToolPanes, call_id: str = "c1") -> str:
    pane = panes.pane(call_id)
    assert pane is not None
    return str(pane.query_one(".tool-pane--status").render())


async def test_stdout_and_stderr_stream_into_the_pane_with_stderr_styled_apart() -> None:
    app = PanesApp()
    async with app.run_test(size=(80, 24)) as pilot:
        panes = app.query_one(ToolPanes)
        start(panes)
        panes.handle(ToolOutput("c1", "stdout", "hello "))
        panes.handle(ToolOutput("c1", "stdout", "world\nsecond"))
        panes.handle(ToolOutput("c1", "stderr", "oops\n"))
        await pilot.pause()
        pane = panes.pane("c1")
        assert pane is not None
        assert pane.output.lines() == ["hello world", "second", "oops"]
        assert pane.output.lines("stderr") == ["oops"]
        assert "running" in status_of(panes)
        out_style = pane.output.render_line(0)._segments[0].style
        err_style = pane.output.render_line(2)._segments[0].style
        assert out_style is not None and err_style is not None
        assert err_style.color != out_style.color
        assert "shout" in str(pane.query_one(".tool-pane--args").render())
        assert "notes.txt" in str(pane.query_one(".tool-pane--args").render())


async def test_pane_keeps_only_the_last_n_lines_of_a_flood() -> None:
    app = PanesApp(max_lines=50)
    async with app.run_test(size=(80, 24)) as pilot:
        panes = app.query_one(ToolPanes)
        start(panes)
        for chunk in range(100):
            text = "".join(f"line {chunk * 100 + i}\n" for i in range(100))
            panes.handle(ToolOutput("c1", "stdout", text))
        panes.handle(ToolOutput("c1", "stdout", "x" * (LINE_CAP * 3)))  # no newline at all
        await pilot.pause()
        pane = panes.pane("c1")
        assert pane is not None
        lines = pane.output.lines()
        assert len(lines) == 50
        assert lines[-4] == "line 9999"
        assert all(len(line) <= LINE_CAP for line in lines)
        assert pane.output.dropped == 10_000 + 3 - 50
        assert "last 50 lines shown" in status_of(panes)
        # The view follows the end of the output (once the layout has caught up).
        await until(pilot, lambda: pane.output.is_vertical_scroll_end,
                    what="the pane to follow the end of its output")


async def test_status_line_for_each_outcome_and_tab_labels() -> None:
    app = PanesApp()
    async with app.run_test(size=(100, 24)) as pilot:
        panes = app.query_one(ToolPanes)
        outcomes = [("ok", 0, "✔ ok · 310 ms"), ("failed", 2, "✗ failed (exit 2) · 310 ms"),
                    ("timed_out", None, "⏱ timed out · 310 ms"),
                    ("cancelled", None, "⊘ cancelled · 310 ms")]
        for i, (status, code, _) in enumerate(outcomes):
            start(panes, f"c{i}", f"tool{i}")
            panes.handle(ToolFinished(f"c{i}", f"tool{i}", status, code, 310, "r"))  # type: ignore[arg-type]
        await settle(pilot, panes)
        for i, (_, _, expected) in enumerate(outcomes):
            assert status_of(panes, f"c{i}") == expected
        # The newest call is the visible tab; the labels carry the status icon.
        pane = panes.active_pane()
        assert pane is not None and pane.state.call_id == "c3"
        from textual.widgets import TabbedContent
        tabbed = app.query_one(TabbedContent)
        labels = [tabbed.get_tab(p.id).label.plain for p in (panes.pane(f"c{i}") for i in range(4))
                  if p is not None and p.id]
        assert labels == ["✔ tool0", "✗ tool1", "⏱ tool2", "⊘ tool3"]


async def test_denied_call_shows_denied() -> None:
    app = PanesApp()
    async with app.run_test() as pilot:
        panes = app.query_one(ToolPanes)
        panes.handle(ToolCallRequested(ToolCall("d1", "rm", {}), "x", "keprompt"))
        panes.handle(ToolCallDecided("d1", "ask", "default", approved=False))
        await pilot.pause()
        assert status_of(panes, "d1") == "⊘ denied"


async def test_cancel_key_and_button_post_cancel_requested_for_the_running_call() -> None:
    app = PanesApp()
    async with app.run_test(size=(80, 24)) as pilot:
        panes = app.query_one(ToolPanes)
        start(panes, "c1", "slow")
        await settle(pilot, panes)
        panes.query_one(OutputLog).focus()
        await pilot.press("c")
        await pilot.pause()
        assert app.cancelled == ["c1"]
        await pilot.click(".tool-pane--cancel")
        await pilot.pause()
        assert app.cancelled == ["c1", "c1"]
        # Once finished there is nothing to cancel.
        panes.handle(ToolFinished("c1", "slow", "cancelled", None, 5, ""))
        await pilot.pause()
        await pilot.press("c")
        await pilot.pause()
        assert app.cancelled == ["c1", "c1"]


async def test_full_output_key_opens_the_spool_tail(tmp_path: Path) -> None:
    spool = tmp_path / "spool.txt"
    with spool.open("w") as f:
        for i in range(600_000):  # ~7.5 MB: only the tail is read
            f.write(f"spooled line {i}\n")
    app = PanesApp(max_lines=10)
    async with app.run_test(size=(100, 30)) as pilot:
        panes = app.query_one(ToolPanes)
        start(panes, spool=str(spool))
        panes.handle(ToolFinished("c1", "shout", "ok", 0, 40, "r", spool_path=str(spool)))
        await settle(pilot, panes)
        panes.query_one(OutputLog).focus()
        await pilot.press("o")
        await app.workers.wait_for_complete()
        await pilot.pause()
        viewer = app.screen
        assert isinstance(viewer, OutputViewer)
        log = viewer.query_one(OutputLog)
        assert log.lines()[-1] == "spooled line 599999"
        assert 1000 < log.line_count < 600_000
        note = str(viewer.query_one(".viewer--note").render())
        assert "Showing the last 4.0 MB of" in note
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, OutputViewer)


async def test_full_output_without_spool_shows_the_kept_lines() -> None:
    app = PanesApp()
    async with app.run_test(size=(100, 30)) as pilot:
        panes = app.query_one(ToolPanes)
        start(panes)
        panes.handle(ToolOutput("c1", "stdout", "only line\n"))
        await settle(pilot, panes)
        await pilot.click(".tool-pane--open")
        await pilot.pause()
        assert isinstance(app.screen, OutputViewer)
        assert app.screen.query_one(OutputLog).lines() == ["only line"]


def test_status_text() -> None:
    assert status_text("running") == "⌛ running"
    assert status_text("failed", 1, 65_000) == "✗ failed (exit 1) · 1m 05s"
    assert status_text("ok", 0, 2500) == "✔ ok · 2.5 s"
    assert status_text("denied", None, 0) == "⊘ denied"


def test_spool_stderr_marks_become_the_stderr_stream() -> None:
    from tuiapp.ui.screens.output_viewer import split_streams

    text = "a\nb\n[stderr] oops\n[stderr] again\nc\n"
    assert split_streams(text) == [("stdout", "a\nb\n"), ("stderr", "oops\nagain\n"),
                                   ("stdout", "c\n")]
    assert split_streams("plain\n") == [("stdout", "plain\n")]


async def test_a_reused_call_id_gets_a_new_pane() -> None:
    app = PanesApp()
    async with app.run_test() as pilot:
        panes = app.query_one(ToolPanes)
        start(panes, "same")
        panes.handle(ToolOutput("same", "stdout", "first run\n"))
        panes.handle(ToolFinished("same", "shout", "ok", 0, 5, ""))
        start(panes, "same")
        panes.handle(ToolOutput("same", "stdout", "second run\n"))
        await pilot.pause()
        pane = panes.pane("same")
        assert pane is not None and pane.output.lines() == ["second run"]
        assert pane.state.status == "running"
        assert len(app.query(".tool-pane")) == 2


def test_output_log_cleans_terminal_escapes_and_progress_bars() -> None:
    log = OutputLog(100)
    log.write("\x1b[31mred\x1b[0m text\n")
    log.write("10%\r50%\r")
    log.write("100%\n")
    log.write("a\tb\x07\n", "stderr")
    log.write("héllo wörld\n")
    # (a bell is shown as its control picture, see core.display)
    assert log.lines() == ["red text", "100%", "a       b\N{SYMBOL FOR BELL}", "héllo wörld"]
    assert log.lines("stderr") == ["a       b\N{SYMBOL FOR BELL}"]
