"""MCP in the TUI (issue 15): an MCP tool's image shows as its placeholder line in the chat
and the tool pane, never base64, and stays with the tool message the model is sent; a
server's resources and prompts show in the functions panel."""

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


async def test_an_mcp_servers_resources_and_prompts_show_in_the_functions_panel(
        tmp_path: Path) -> None:
    """Issue 15: resources/list and prompts/list of a configured server are visible in the
    functions panel, and its prompt is offered to start a session (a real server, over the
    legacy HTTP+SSE transport)."""
    import json
    import subprocess

    from textual.widgets import Static

    from tuiapp.project.session_start import choices

    fake = Path(__file__).resolve().parents[1] / "fakes" / "mcp_http_server.py"
    proc = subprocess.Popen([sys.executable, str(fake), "--transport", "sse"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("PORT "), line
        proj = make_project(tmp_path / "proj")
        (proj / "mcp.json").write_text(json.dumps({"mcpServers": {"docs": {
            "url": f"http://127.0.0.1:{line.split()[1]}/sse", "type": "sse"}}}))
        app = app_for(proj)
        async with app.run_test(size=(120, 40)) as pilot:
            # (a key pressed before the chat screen is composed is lost: wait for it first)
            await until(pilot, lambda: app.screen.query("Transcript"), what="the chat screen")
            await pilot.press("ctrl+f")
            await until(pilot, lambda: app.screen.query(".functions-panel--servers"),
                        what="the functions panel")
            servers = app.screen.query_one(".functions-panel--servers", Static)

            def text() -> str:
                return " ".join(str(servers.render()).split())

            # Resources and prompts are listed after the server is ready, on a later refresh.
            await until(pilot, lambda: "docs ready" in text() and "1 prompt" in text(),
                        timeout=60, what="the server and its prompt in the functions panel")
            assert "2 resources (readme, schema)" in text() and "1 prompt (review)" in text()
            assert "mcp:docs/review" in {c.name for c in choices(app.ws)}
            from tuiapp.ui.slash.dispatch import user_commands  # and it is `/review`

            (review,) = [c for c in user_commands(app) if c.name == "review"]
            assert review.ref == "mcp:docs/review" and review.usage == "change"
            assert review.description == "Review a change (MCP prompt of docs)"
            await send(pilot, "/review")  # its required argument missing: one line, not sent
            await until(pilot, lambda: any("it needs change: /review change" in n.message
                                           for n in app._notifications), what="the line")
            assert not app.chat.history
            app.query_one("#prompt").clear()
            await send(pilot, "/review 'a typo in the README'")  # its argument, by position
            await until(pilot, lambda: any("Review this change: a typo in the README"
                                           in m.content for m in app.chat.history),
                        what="the server's prompt in the conversation")
    finally:
        proc.kill()
        proc.wait(10)


async def test_a_failed_server_says_so_once_in_one_short_line(tmp_path: Path) -> None:
    """Its toast came back on every start and filled a 20×6 screen: now once per failure,
    one short line; the functions panel keeps the whole reason."""
    proj = make_project(tmp_path / "proj")
    (proj / "kep.toml").write_text(
        "[tools]\nbuiltins = false\n\n[mcp.servers.broken]\n"
        f'command = "{sys.executable}"\nargs = ["{FAKE}", "--crash-on-start"]\n')

    def toasts(app: object) -> list[str]:
        return [str(n.message) for n in app._notifications  # type: ignore[attr-defined]
                if "MCP server broken" in str(n.message)]

    for run, size in ((1, (20, 6)), (2, (120, 40))):
        app = app_for(proj)
        async with app.run_test(size=size) as pilot:
            await until(pilot, lambda a=app: a.ws.mcp is not None
                        and a.ws.mcp.states()["broken"].status == "failed", timeout=30,
                        what="the server to fail")
            await pilot.pause(0.2)
            if run == 1:
                [toast] = toasts(app)
                assert "\n" not in toast and len(toast) <= 110, toast
            else:
                assert toasts(app) == []  # the same failure again: said already
                assert "FAKE_TOKEN" in app.functions.servers["broken"][1]
