"""Functions panel: every tool with format, source and status; broken tools with their reason."""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import OptionList, Static

from tuiapp import paths
from tuiapp.tools.model import BrokenTool, ToolSpec
from tuiapp.ui.widgets.functions_panel import FunctionsPanel

ROOT = Path("/projects/demo")


class PanelApp(App[None]):
    def compose(self) -> ComposeResult:
        yield FunctionsPanel(ROOT)


def tool(name: str, source: str, fmt: str = "keprompt") -> ToolSpec:
    return ToolSpec(name, f"{name} things", {"type": "object", "properties": {}}, fmt, source)


def rows(app: PanelApp) -> list[str]:
    listing = app.query_one(OptionList)
    return [str(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)]


def summary(app: PanelApp) -> str:
    return str(app.query_one(".functions-panel--summary", Static).render())


async def test_lists_tools_and_broken_tools_with_reason_and_updates_live() -> None:
    app = PanelApp()
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(FunctionsPanel)
        panel.update_entries([
            tool("shout", str(ROOT / "prompts/functions/shout")),
            BrokenTool(str(ROOT / "prompts/functions/bad"), "keprompt",
                       "--list-functions printed a JSON object, expected an array"),
            tool("get_time", "mcp:time", "mcp"),
            tool("readfile", str(paths.builtin_functions_dir() / "files")),
        ])
        await pilot.pause()
        assert summary(app) == "Functions · 3 ok · 1 broken"
        shown = rows(app)
        # Broken first, with its reason; sources relative to the project; built-ins marked.
        assert shown[0].startswith("✗ prompts/functions/bad  keprompt")
        assert "expected an array" in shown[0]
        assert any(r.startswith("✔ shout  keprompt") and "prompts/functions/shout" in r
                   for r in shown)
        assert any("get_time  mcp" in r and "mcp:time" in r for r in shown)
        assert any("readfile" in r and "built-in/files" in r for r in shown)

        # The registry changes: the broken tool is fixed, a tool disappears.
        panel.update_entries([tool("shout", str(ROOT / "prompts/functions/shout")),
                              tool("bad_fixed", str(ROOT / "prompts/functions/bad"))])
        await pilot.pause()
        assert summary(app) == "Functions · 2 ok"
        assert not any(r.startswith("✗") for r in rows(app))
        assert len(rows(app)) == 2


async def test_broken_reason_is_styled_as_an_error() -> None:
    app = PanelApp()
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(FunctionsPanel)
        panel.update_entries([BrokenTool("/elsewhere/x", "loki", "run() has *args")])
        await pilot.pause()
        prompt = app.query_one(OptionList).get_option_at_index(0).prompt
        styles = {str(span.style) for span in prompt.spans}  # type: ignore[union-attr]
        assert any("$text-error" in s for s in styles)


async def test_server_states() -> None:
    app = PanelApp()
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(FunctionsPanel)
        servers = app.query_one(".functions-panel--servers", Static)
        assert not servers.display
        panel.update_servers({"time": ("ready", "2 tools"), "broken": ("failed", "exit 1")})
        await pilot.pause()
        text = str(servers.render())
        assert servers.display
        assert "time ready (2 tools)" in text and "broken failed (exit 1)" in text


async def test_hidden_panel_renders_when_shown() -> None:
    app = PanelApp()
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(FunctionsPanel)
        panel.display = False
        await pilot.pause()
        panel.update_entries([tool("late", str(ROOT / "prompts/functions/late"))])
        await pilot.pause()
        panel.display = True
        await pilot.pause()
        assert summary(app) == "Functions · 1 ok"
        assert rows(app)[0].startswith("✔ late")
