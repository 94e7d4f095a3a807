"""Snapshots (pytest-textual-snapshot) of kep's main screens and panels.

Deterministic by construction: fixed terminal size, the offline model, fixed durations in the
events, no temp paths on screen. Regenerate after an intended change with
`pytest tests/ui/test_snapshots.py --snapshot-update` and review the SVGs.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.pilot import Pilot
from textual.widgets import Input

from tuiapp.ui.themes import register_themes
from tuiapp.ui.widgets.functions_panel import FunctionsPanel
from tuiapp.ui.widgets.tool_panes import ToolPanes
from tuiapp.vocab.events import ToolCallRequested, ToolCallStarted, ToolFinished, ToolOutput
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import BrokenTool, ToolSpec

SIZE = (100, 30)
ROOT = Path("/projects/demo")


class PanelsApp(App[None]):
    """The two side panels on their own, themed like kep."""

    def __init__(self, theme: str = "dark") -> None:
        super().__init__()
        self._theme_name = theme

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield FunctionsPanel(ROOT)
            yield ToolPanes(200)

    def on_mount(self) -> None:
        register_themes(self)
        self.theme = self._theme_name
        # The focused filter's cursor would blink: a snapshot must not depend on when it is taken.
        for box in self.query(Input):
            box.cursor_blink = False
        self.query_one(FunctionsPanel).update_entries([
            ToolSpec("shout", "Upper-case a file", {}, "keprompt",
                     str(ROOT / "prompts/functions/shout")),
            ToolSpec("get_time", "Current time", {}, "mcp", "mcp:time"),
            BrokenTool(str(ROOT / "prompts/functions/bad"), "keprompt",
                       "--list-functions printed a JSON object, expected an array"),
        ])


async def _stream_tool(pilot: Pilot[None]) -> None:
    panes = pilot.app.query_one(ToolPanes)
    panes.handle(ToolCallRequested(ToolCall("c1", "ls", {"path": "."}), "", "keprompt"))
    panes.handle(ToolCallStarted("c1", "ls"))
    panes.handle(ToolFinished("c1", "ls", "ok", 0, 42, ""))
    panes.handle(ToolCallRequested(ToolCall("c2", "shout", {"file": "notes.txt"}), "", "keprompt"))
    panes.handle(ToolCallStarted("c2", "shout"))
    for i in range(40):
        panes.handle(ToolOutput("c2", "stdout", f"LINE {i} OF NOTES.TXT\n"))
    panes.handle(ToolOutput("c2", "stderr", "shout: warning: line 41 is empty\n"))
    # Output is drawn in batches: wait for all of it (two pauses were not always enough on a
    # loaded machine, and the snapshot caught a half-drawn pane).
    pane = panes.pane("c2")
    assert pane is not None
    for _ in range(250):
        if len(pane.output.lines()) >= 41:
            break
        await pilot.pause(0.02)
    await pilot.pause()
    await pilot.pause()


def test_tool_pane_streaming_and_functions_panel(snap_compare) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(PanelsApp(), terminal_size=SIZE, run_before=_stream_tool)


def test_tool_pane_failed_high_contrast(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await _stream_tool(pilot)
        pilot.app.query_one(ToolPanes).handle(ToolFinished("c2", "shout", "failed", 3, 1530, ""))
        await pilot.pause()

    assert snap_compare(PanelsApp("high-contrast"), terminal_size=SIZE, run_before=run_before)


# ---- the whole app, on the offline model, in a temp project ---------------------------------

APP_SIZE = (110, 32)


def demo_project(project: Path) -> Path:
    from tuiapp.ui.screenshots import make_demo_project

    return make_demo_project(project / "demo")


def kep_app(project: Path, first_run: bool = False):  # type: ignore[no-untyped-def]
    from tuiapp.project import config as project_config
    from tuiapp.project.workspace import Workspace
    from tuiapp.ui.app import make_app

    return make_app(Workspace(project_config.load(project)), model="offline", first_run=first_run)


async def _ready(pilot: Pilot[None]) -> None:
    from tuiapp.ui.widgets.prompt_input import PromptInput

    # A blinking cursor would make the snapshot depend on timing.
    pilot.app.query_one(PromptInput).cursor_blink = False
    await pilot.app.tools_ready.wait()  # type: ignore[attr-defined]
    await pilot.pause()


async def _until(pilot: Pilot[None], check, what: str) -> None:  # type: ignore[no-untyped-def]
    for _ in range(400):
        if check():
            return
        await pilot.pause(0.025)
    raise AssertionError(f"timed out waiting for {what}")


async def _ask(pilot: Pilot[None], text: str) -> None:
    await _ready(pilot)
    await pilot.press(*text)
    await pilot.press("enter")


def test_first_run_screen(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    app = kep_app(demo_project(tmp_path), first_run=True)
    assert snap_compare(app, terminal_size=APP_SIZE, run_before=_ready)


def test_chat_with_streamed_answer(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    app = kep_app(demo_project(tmp_path))

    async def run_before(pilot: Pilot[None]) -> None:
        await _ask(pilot, "what can you do?")
        await pilot.pause(0.1)
        await _until(pilot, lambda: not app.busy, "the end of the answer")
        await pilot.pause()

    assert snap_compare(app, terminal_size=APP_SIZE, run_before=run_before)


def test_pending_approval(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    app = kep_app(demo_project(tmp_path))

    async def run_before(pilot: Pilot[None]) -> None:
        await _ask(pilot, "shout notes.txt")
        await _until(pilot, lambda: bool(app.query_one("#approval").display), "the approval")
        await pilot.pause()

    assert snap_compare(app, terminal_size=APP_SIZE, run_before=run_before)


def test_pending_approval_at_120_columns(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """With a session id in the footer the state and the keys part come close: a separator
    keeps them apart ("waiting for you▸ approval" ran together)."""
    from tuiapp.ui.widgets.status_footer import StatusFooter

    app = kep_app(demo_project(tmp_path))

    async def run_before(pilot: Pilot[None]) -> None:
        await _ask(pilot, "shout notes.txt")
        await _until(pilot, lambda: bool(app.query_one("#approval").display), "the approval")
        app.query_one(StatusFooter).session_id = "3f9a07c2"  # fixed: ids are random
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 35), run_before=run_before)


def test_functions_panel_with_broken_tool(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    app = kep_app(demo_project(tmp_path))

    async def run_before(pilot: Pilot[None]) -> None:
        await _ready(pilot)
        await pilot.press("ctrl+f")
        await pilot.pause()

    assert snap_compare(app, terminal_size=APP_SIZE, run_before=run_before)


# ---- narrow terminals: the side panels fold into overlays -------------------------------------

def test_chat_at_80x24(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    app = kep_app(demo_project(tmp_path))

    async def run_before(pilot: Pilot[None]) -> None:
        await _ask(pilot, "what can you do?")
        await pilot.pause(0.1)
        await _until(pilot, lambda: not app.busy, "the end of the answer")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_functions_overlay_at_60x20(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    app = kep_app(demo_project(tmp_path))

    async def run_before(pilot: Pilot[None]) -> None:
        await _ready(pilot)
        await pilot.press("ctrl+f")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(60, 20), run_before=run_before)


def test_tool_panes_overlay_at_60x20(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    app = kep_app(demo_project(tmp_path))

    async def run_before(pilot: Pilot[None]) -> None:
        await _ready(pilot)
        await pilot.press("ctrl+t")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(60, 20), run_before=run_before)
