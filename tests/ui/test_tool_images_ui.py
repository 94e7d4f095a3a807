"""An MCP tool's image in the TUI (issue 15): the chat and the tool pane show the placeholder
line, never base64, and the image stays with the tool message the model is sent."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from tui_helpers import app_for, make_project, send, tool_messages, until, wait_idle

FAKE = Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py"
LONG_BASE64 = re.compile(r"[A-Za-z0-9+/]{200,}")


def screen(pilot: Pilot[Any]) -> str:
    return "\n".join(s.text for s in pilot.app.screen._compositor.render_strips())


async def test_an_mcp_image_shows_as_its_placeholder(tmp_path: Path) -> None:
    proj = make_project(tmp_path / "proj")
    (proj / "kep.toml").write_text(
        "[tools]\nbuiltins = false\n\n[mcp.servers.fs]\n"
        f'command = "{sys.executable}"\nargs = ["{FAKE}"]\n\n'
        '[[approval.rules]]\ntool = "fs_.*"\naction = "allow"\n')
    app = app_for(proj)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: "fs_read_media_file" in app.ws.registry.tools, timeout=30,
                    what="the MCP server's tools")
        await send(pilot, 'fs_read_media_file {"path": "pic.png"}')
        await wait_idle(pilot)
        [tool] = tool_messages(app)
        assert [i.media_type for i in tool.tool_images] == ["image/png"]
        from tuiapp.ui.widgets.tool_panes import ToolPanes

        panes = app.query_one(ToolPanes)
        pane = next(iter(panes._panes.values()))
        shown = "\n".join([screen(pilot), *pane.output.lines()])
        assert "[image: image/png, 2.0 KiB]" in pane.output.lines()
        assert "returned 1 image (image/png)" in shown
        assert not LONG_BASE64.search(shown)
        for widget in app.query("Static"):
            assert not LONG_BASE64.search(str(widget.render()))
