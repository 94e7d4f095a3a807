"""Command palette entries and what they do: export, new/open session, model, theme."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest
from textual.command import CommandPalette
from tui_helpers import SIZE, app_for, make_project, send, until, wait_approval, wait_idle

from tuiapp.conversation.store import Store
from tuiapp.settings import paths
from tuiapp.ui.widgets.status_footer import StatusFooter
from tuiapp.ui.widgets.transcript import Transcript, UserMessage


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


def users(app: object) -> list[str]:
    return [str(u.render()) for u in app.query_one(Transcript).query(UserMessage)]  # type: ignore[attr-defined]


async def palette(pilot: object, query: str) -> None:
    await pilot.press("ctrl+p")  # type: ignore[attr-defined]
    await until(pilot, lambda: isinstance(pilot.app.screen, CommandPalette))  # type: ignore[attr-defined]
    await pilot.press(*query)  # type: ignore[attr-defined]
    await pilot.pause(0.3)  # type: ignore[attr-defined]
    await pilot.press("enter")  # type: ignore[attr-defined]


@pytest.mark.slow
async def test_export_new_and_open_sessions(proj: Path) -> None:
    store = Store.open()
    app = app_for(proj, store=store)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "shout notes.txt")
        await wait_approval(pilot)
        await pilot.press("y")
        await wait_idle(pilot)
        first = app.chat.session_id
        assert first is not None

        await palette(pilot, "export session")
        target = proj / f"kep-session-{first}.md"
        await until(pilot, target.exists, what="the export")
        assert "shout notes.txt" in target.read_text()
        assert any(str(target) in n.message for n in app._notifications)

        await pilot.press("ctrl+n")
        await until(pilot, lambda: not users(app), what="an empty transcript")
        assert app.chat.session_id is None and app.query_one(StatusFooter).session_id is None
        await send(pilot, "hello")
        await wait_idle(pilot)
        assert app.chat.session_id not in (None, first)

        app.resume(first)
        await until(pilot, lambda: users(app) == ["shout notes.txt"], what="the old session")
        assert app.chat.session_id == first
        assert [m.role for m in app.chat.history] == ["user", "assistant", "tool", "assistant"]
    store.close()


async def test_switch_model_checks_the_name(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        app.switch_model("nope/model")
        await pilot.pause()
        assert app.chat.model == "offline"
        assert any("unknown provider" in n.message for n in app._notifications)
        app.switch_model("ollama/llama3.2")  # no key needed
        await pilot.pause()
        assert app.chat.model == "ollama/llama3.2"
        assert app.query_one(StatusFooter).model == "ollama/llama3.2"
        assert "ollama/llama3.2" in app.model_choices() and "offline" in app.model_choices()


async def test_chosen_theme_is_saved_where_it_takes_effect(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        app.set_theme("light")
        await pilot.pause()
        assert app.theme == "light"
        user = tomllib.loads(paths.user_config_file().read_text())
        assert user["theme"] == "light"
    # A project that sets its own theme gets the choice (the project file wins on load).
    (proj / "kep.toml").write_text('theme = "dark"\n')
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        app.set_theme("high-contrast")
        await pilot.pause()
        assert tomllib.loads((proj / "kep.toml").read_text())["theme"] == "high-contrast"


@pytest.mark.slow
async def test_mcp_servers_start_with_the_app_and_show_in_the_functions_panel(
        tmp_path: Path) -> None:
    fake = Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py"
    proj = make_project(tmp_path / "proj")
    (proj / "kep.toml").write_text(
        "[tools]\nbuiltins = false\n\n[mcp.servers.fake]\n"
        f'command = "{sys.executable}"\nargs = ["{fake}"]\n')
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: any(n.startswith("fake") and "echo" in n
                                       for n in app.ws.registry.tools), timeout=30,
                    what="the MCP server's tools")
        await until(pilot, lambda: app.functions.servers.get("fake", ("",))[0] == "ready",
                    what="the server state in the functions panel")
        assert any("echo" in getattr(e, "name", "") for e in app.functions.entries)
        # the palette offers a restart of the server, and it comes back ready
        before = app.ws.mcp.states()["fake"]
        await palette(pilot, "restart fake")
        await until(pilot, lambda: (app.ws.mcp.states()["fake"] is not before
                                    and app.ws.mcp.states()["fake"].status == "ready"),
                    timeout=30, what="the restarted server")
    assert app.ws.mcp is not None
