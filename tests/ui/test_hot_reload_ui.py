"""Hot reload in the TUI: files saved on disk show up without any key press."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import write_tool
from textual.pilot import Pilot
from textual.widgets import OptionList
from tui_helpers import SIZE, app_for, make_project, until

from tuiapp.settings import paths
from tuiapp.ui.live_reload import running_reloader
from tuiapp.ui.widgets.functions_panel import FunctionsPanel
from tuiapp.vocab.tool_specs import BrokenTool, ToolSpec

FRESH = """#!/bin/sh
if [ "$1" = --list-functions ]; then
  echo '[{"name":"fresh","description":"new","parameters":{"type":"object","properties":{}}}]'
  exit 0
fi
echo fresh
"""


async def watching(pilot: Pilot[Any]) -> None:
    """Until the app's file watch is in place (edits made before it are caught up on too,
    except theme files: re-applying a theme at every start would be wasted work)."""
    await until(pilot, lambda: (r := running_reloader(pilot.app)) is not None and r.ready.is_set(),
                what="the watch to start")


def option_ids(panel: FunctionsPanel) -> list[str]:
    listing = panel.query_one(OptionList)
    return [str(listing.get_option_at_index(i).id) for i in range(listing.option_count)]


async def test_functions_panel_follows_saved_files_without_a_key_press(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    app = app_for(root, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        app.action_toggle_functions()  # the panel in view (it renders lazily when hidden)
        panel = app.query_one(FunctionsPanel)
        await until(pilot, lambda: "tool:shout:" in " ".join(option_ids(panel)), what="panel")
        fresh = write_tool(root / "prompts" / "functions" / "fresh", FRESH)
        await until(pilot, lambda: any(i.startswith("tool:fresh:") for i in option_ids(panel)),
                    what="the new tool in the functions panel")
        assert any(isinstance(e, ToolSpec) and e.name == "fresh" for e in panel.entries)
        await until(pilot, lambda: any("added fresh" in n.message for n in app._notifications),
                    what="a notification naming the new tool")  # notify() posts a message

        fresh.chmod(0o644)  # broken: the panel and the notification say why
        await until(pilot, lambda: f"broken:{fresh}" in option_ids(panel), what="broken entry")
        broken = [e for e in panel.entries if isinstance(e, BrokenTool)]
        assert [b.error.split(":")[0] for b in broken] == ["not executable"]
        await until(pilot, lambda: any("broken prompts/functions/fresh (not executable"
                                       in n.message for n in app._notifications),
                    what="a notification with the reason")


async def test_a_theme_being_edited_refreshes_on_save(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    themes = paths.user_themes_dir()
    themes.mkdir(parents=True)
    theme = themes / "mine.toml"
    theme.write_text('primary = "#336699"\nbackground = "#101010"\n')
    paths.user_config_file().write_text('theme = "mine"\n')
    app = app_for(root, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await watching(pilot)
        assert app.theme == "mine"
        assert app.screen.styles.background.hex == "#101010"
        theme.write_text('primary = "#336699"\nbackground = "#202830"\n')
        await until(pilot, lambda: app.screen.styles.background.hex == "#202830",
                    what="the edited theme to apply")
