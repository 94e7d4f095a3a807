"""`MCP: log in NAME` in the command palette: an HTTP server that needs an OAuth login offers
it; the authorization URL shows in a notice (the test plays the browser with it); the server
comes back with the new tokens and its tools; no token is ever on the screen."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from textual.command import CommandPalette
from textual.pilot import Pilot
from tui_helpers import app_for, make_project, until

FAKE = Path(__file__).resolve().parents[1] / "fakes" / "mcp_oauth_server.py"


def notices(app: Any) -> str:
    return "\n".join(str(n.message) for n in app._notifications)


def screen(pilot: Pilot[Any]) -> str:
    return "\n".join(s.text for s in pilot.app.screen._compositor.render_strips())


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_log_in_from_the_palette(tmp_path: Path, size: tuple[int, int]) -> None:
    proc = subprocess.Popen([sys.executable, str(FAKE)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("PORT "), line
        port = line.split()[1]
        proj = make_project(tmp_path / "proj")
        (proj / "kep.toml").write_text("[tools]\nbuiltins = false\n")
        (proj / "mcp.json").write_text(json.dumps({"mcpServers": {"secure": {
            "url": f"http://127.0.0.1:{port}/mcp"}}}))
        app = app_for(proj)
        async with app.run_test(size=size) as pilot:
            await until(pilot, lambda: app.screen.query("Transcript"), what="the chat screen")

            def reason() -> str:
                state = app.ws.mcp.states().get("secure") if app.ws.mcp else None
                return state.reason if state else ""

            await until(pilot, lambda: "kep mcp login" in reason(), timeout=30,
                        what="the server asking for a login")
            await pilot.press("ctrl+p")
            await until(pilot, lambda: isinstance(app.screen, CommandPalette), what="palette")
            await pilot.press(*"log in secure")
            await pilot.pause(0.5)
            await pilot.press("enter")
            await until(pilot, lambda: "/authorize?" in notices(app), timeout=30,
                        what="the authorization URL")
            url = re.search(r"http://127\.0\.0\.1:\d+/authorize\?\S+", notices(app))
            assert url
            async with httpx2.AsyncClient(follow_redirects=True, timeout=30) as browser:
                await browser.get(url.group())
            await until(pilot, lambda: any(n.endswith("whoami")
                                           for n in app.ws.registry.tools),
                        timeout=30, what="the server's tools after the login")
            assert "logged in to secure" in notices(app)
            from tuiapp.mcp.oauth_store import TokenStore

            data = json.loads(TokenStore("secure", f"http://127.0.0.1:{port}/mcp")
                              .path.read_text())
            token = data["tokens"]["access_token"]
            assert token not in screen(pilot) and token not in notices(app)
    finally:
        proc.terminate()
        proc.wait(10)
