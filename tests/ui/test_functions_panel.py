"""Functions panel: every tool with format, source and status; broken tools with their reason."""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import Input, OptionList, Static

from tuiapp.settings import paths
from tuiapp.tools.check import Finding
from tuiapp.ui.widgets.functions_panel import FunctionsPanel
from tuiapp.vocab.tool_specs import BrokenTool, ToolSpec

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
        # Grouped by source, broken first, with its full reason and a fix hint; sources
        # relative to the project; built-ins marked; MCP grouped by server.
        assert shown[0] == "prompts/functions/bad  keprompt"
        assert shown[1].startswith("  ✗ bad  keprompt") and "expected an array" in shown[1]
        assert "fix: print only the JSON array on stdout" in shown[1]
        i = shown.index("prompts/functions/shout  keprompt")
        assert shown[i + 1].startswith("  ✔ shout  keprompt") and "shout things" in shown[i + 1]
        i = shown.index("mcp:time  mcp")
        assert shown[i + 1].startswith("  ✔ get_time  mcp")
        assert "built-in/files  keprompt" in shown

        # The registry changes: the broken tool is fixed, a tool disappears.
        panel.update_entries([tool("shout", str(ROOT / "prompts/functions/shout")),
                              tool("bad_fixed", str(ROOT / "prompts/functions/bad"))])
        await pilot.pause()
        assert summary(app) == "Functions · 2 ok"
        assert not any("✗" in r for r in rows(app))
        assert len(rows(app)) == 4  # two groups of one tool


async def test_broken_reason_is_styled_as_an_error() -> None:
    app = PanelApp()
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(FunctionsPanel)
        panel.update_entries([BrokenTool("/elsewhere/x", "loki", "run() has *args")])
        await pilot.pause()
        prompt = app.query_one(OptionList).get_option_at_index(1).prompt
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
        assert rows(app)[1].startswith("  ✔ late")


async def test_filter_narrows_by_name_and_enter_opens_a_tool() -> None:
    chosen: list[object] = []

    class Catch(PanelApp):
        def on_functions_panel_tool_chosen(self, message: FunctionsPanel.ToolChosen) -> None:
            chosen.append(message.entry)

    app = Catch()
    async with app.run_test(size=(80, 24)) as pilot:
        panel = app.query_one(FunctionsPanel)
        many = [tool(f"t{i:03d}", str(ROOT / f"prompts/functions/f{i % 7}")) for i in range(500)]
        panel.update_entries([*many, tool("word_count", str(ROOT / "prompts/functions/wc"))])
        await pilot.pause()
        panel.action_filter()
        await pilot.press(*"WORD")  # case does not matter
        await pilot.pause()
        assert rows(app)[0] == "prompts/functions/wc  keprompt" and len(rows(app)) == 2
        await pilot.press("enter", "enter")  # to the list, then open the highlighted tool
        await pilot.pause()
        assert [getattr(e, "name", None) for e in chosen] == ["word_count"]
        panel.query_one("#functions-filter", Input).value = "\tno such\x1b"
        await pilot.pause()
        assert rows(app) == []


async def test_check_findings_badge_and_list() -> None:
    app = PanelApp()
    async with app.run_test(size=(100, 24)) as pilot:
        panel = app.query_one(FunctionsPanel)
        src = str(ROOT / "prompts/functions/shout")
        panel.update_entries([tool("shout", src)])
        panel.update_findings([
            Finding("warning", "additional-properties", src, "shout",
                    "shout: additionalProperties is not false", "add it"),
            Finding("info", "no-version", src, None, "no --version", "answer --version"),
        ])
        await pilot.pause()
        assert summary(app) == "Functions · 1 ok · check: 1 warning, 1 info"
        shown = rows(app)
        assert shown[2].startswith("    ⚠ additional-properties: shout: additional")
        assert "fix: add it" in shown[2] and "ℹ no-version" in shown[3]
        other = str(ROOT / "prompts/functions/other")
        panel.update_entries([tool("shout", src), tool("other", other)])  # shout unchanged
        await pilot.pause()
        assert len(panel.findings or []) == 2
        changed = tool("shout", src)
        changed = ToolSpec("shout", "now described", changed.parameters, "keprompt", src)
        panel.update_entries([changed, tool("other", other)])  # shout's file changed
        await pilot.pause()
        assert panel.findings == [] and summary(app).endswith("check: clean")
