"""What MCP servers ask of the TUI (tests/fakes/mcp_peer_server.py, --hostile: markup, ESC
and BEL in every string it sends): sampling in the approval panel, elicitation forms and
URLs, resources attached from the functions panel, templates filled in, and a flood of
list_changed that leaves the UI responsive. At 80x24 and wide."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from tui_helpers import app_for, make_project, send, tool_messages, until, wait_approval, wait_idle

PEER = Path(__file__).resolve().parents[1] / "fakes" / "mcp_peer_server.py"
SIZES = [(80, 24), (160, 50)]


def screen(pilot: Pilot[Any]) -> str:
    return "\n".join(s.text for s in pilot.app.screen._compositor.render_strips())


def project(tmp_path: Path, *flags: str, allow: bool = True) -> Path:
    proj = make_project(tmp_path / "proj")
    args = json.dumps([str(PEER), "--hostile", *flags])
    rules = '[[approval.rules]]\ntool = "peer_.*"\naction = "allow"\n' if allow else ""
    (proj / "kep.toml").write_text(
        f"[tools]\nbuiltins = false\n\n{rules}\n[mcp.servers.peer]\n"
        f"command = {json.dumps(sys.executable)}\nargs = {args}\n")
    return proj


async def ready(pilot: Pilot[Any]) -> None:
    app = pilot.app
    await until(pilot, lambda: app.screen.query("Transcript"), what="the chat screen")
    await until(pilot, lambda: "peer_sample" in app.ws.registry.tools, timeout=30,
                what="the server's tools")


def no_raw_control(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text


def result(app: Any) -> Any:
    (tool,) = tool_messages(app)
    body = tool.content
    return json.loads(body[body.index("{"):body.rindex("}") + 1])


@pytest.mark.parametrize("size", SIZES)
async def test_a_form_elicitation_opens_a_form_and_the_answer_goes_back(
        tmp_path: Path, size: tuple[int, int]) -> None:
    from textual.widgets import Input

    from tuiapp.ui.screens.elicitation import ElicitationScreen

    app = app_for(project(tmp_path))
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        await send(pilot, "peer_elicit_form {}")
        await until(pilot, lambda: isinstance(app.screen, ElicitationScreen),
                    what="the elicitation form")
        shown = screen(pilot)
        assert "MCP server peer asks for input" in shown
        assert "[bold red]boom[/]" in shown  # the server's markup, shown as text
        no_raw_control(shown)
        await pilot.press("ctrl+s")  # the required name is empty: one line, the form stays
        await pilot.pause()
        assert isinstance(app.screen, ElicitationScreen)
        app.screen.query(Input).first().value = "Ann"
        await pilot.press("ctrl+s")
        await wait_idle(pilot)
        got = result(app)
        assert got["action"] == "accept" and got["content"]["name"] == "Ann"


@pytest.mark.slow
async def test_escape_cancels_and_ctrl_d_declines(tmp_path: Path) -> None:
    from tuiapp.ui.screens.elicitation import ElicitationScreen

    app = app_for(project(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await send(pilot, "peer_elicit_form {}")
        await until(pilot, lambda: isinstance(app.screen, ElicitationScreen), what="the form")
        await pilot.press("escape")
        await wait_idle(pilot)
        assert result(app) == {"action": "cancel"}
        await send(pilot, "peer_elicit_form {}")
        await until(pilot, lambda: isinstance(app.screen, ElicitationScreen), what="the form")
        await pilot.press("ctrl+d")
        await wait_idle(pilot)
        assert [json.loads(m.content[m.content.index("{"):m.content.rindex("}") + 1])
                for m in tool_messages(app)][-1] == {"action": "decline"}


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
async def test_a_url_elicitation_shows_the_url_and_opens_it_only_on_a_key(
        tmp_path: Path, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    from tuiapp.ui.screens import elicitation
    from tuiapp.ui.screens.elicitation import ElicitationScreen

    opened: list[str] = []
    monkeypatch.setattr(elicitation, "open_in_browser", lambda url: opened.append(url))
    app = app_for(project(tmp_path))
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        await send(pilot, "peer_elicit_url {}")
        await until(pilot, lambda: isinstance(app.screen, ElicitationScreen), what="the URL")
        assert "https://example.com/login?x=1" in screen(pilot)
        await pilot.pause(0.2)
        assert opened == []  # never by itself
        await pilot.press("o")
        await until(pilot, lambda: opened, what="the browser")
        assert opened == ["https://example.com/login?x=1"]
        await pilot.press("ctrl+s")
        await wait_idle(pilot)
        assert result(app) == {"action": "accept"}


@pytest.mark.slow
async def test_an_unsupported_schema_is_one_notice_and_declined(tmp_path: Path) -> None:
    from tuiapp.ui.screens.elicitation import ElicitationScreen

    app = app_for(project(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await send(pilot, 'peer_elicit_form {"kind": "unsupported"}')
        await wait_idle(pilot)
        assert not isinstance(app.screen, ElicitationScreen)
        assert result(app) == {"action": "decline"}
        assert "asked for input kep cannot show" in screen(pilot)


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
async def test_sampling_asks_in_the_approval_panel_and_runs_on_the_chat_model(
        tmp_path: Path, size: tuple[int, int]) -> None:
    app = app_for(project(tmp_path))
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        await send(pilot, "peer_sample {}")
        panel = await wait_approval(pilot)
        assert panel.current is not None and panel.current.call.name == "mcp:peer:sampling"
        shown = screen(pilot)
        assert "mcp:peer:sampling" in shown
        no_raw_control(shown)
        await pilot.press("y")
        await wait_idle(pilot)
        got = result(app)
        assert got["model"] == "offline" and got["role"] == "assistant"


@pytest.mark.slow
async def test_denied_sampling_goes_back_as_an_error(tmp_path: Path) -> None:
    app = app_for(project(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await send(pilot, "peer_sample {}")
        await wait_approval(pilot)
        await pilot.press("n", *"not now", "enter")
        await wait_idle(pilot)
        (tool,) = tool_messages(app)
        assert "the user denied this call: not now" in tool.content


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES)
async def test_resources_are_picked_from_the_functions_panel_and_attached(
        tmp_path: Path, size: tuple[int, int]) -> None:
    from textual.widgets import OptionList

    from tuiapp.ui.screens.resources import ResourcesScreen

    app = app_for(project(tmp_path, "--many"))
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        await until(pilot, lambda: app.ws.mcp and app.ws.mcp.catalogs().get("peer"),
                    what="the catalog")
        await pilot.press("ctrl+f")
        await until(pilot, lambda: app.screen.query(".functions-panel--servers"),
                    what="the functions panel")
        app.functions.query_one(OptionList).focus()
        await pilot.pause(0.6)  # a letter sooner than this after a focus change is typing
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, ResourcesScreen)
                    and app.screen.query(OptionList), what="resources")
        listing = app.screen.query_one(OptionList)
        assert listing.option_count >= 503  # header, template, 501 resources
        shown = screen(pilot)
        assert "[bold red]boom[/]" in shown
        no_raw_control(shown)
        listing.highlighted = 2  # the first resource (after the header and the template)
        await pilot.press("enter")
        from tuiapp.ui import resource_attach

        await until(pilot, lambda: resource_attach.pending(app), what="the attachment")
        await pilot.press("escape")
        await send(pilot, "what is in it?")
        await wait_idle(pilot)
        first = next(m for m in app.chat.history if m.role == "user")
        assert first.content.startswith('<resource server="peer" uri="memo://note/0"')
        assert "contents of memo://note/0" in first.content
        assert first.content.endswith("what is in it?")


@pytest.mark.slow
async def test_a_template_is_filled_in_through_a_form(tmp_path: Path) -> None:
    from textual.widgets import Input, OptionList

    from tuiapp.ui import resource_attach
    from tuiapp.ui.screens.resources import ResourcesScreen, TemplateScreen, open_screen

    app = app_for(project(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await until(pilot, lambda: app.ws.mcp and app.ws.mcp.catalogs().get("peer"),
                    what="the catalog")
        open_screen(app)
        await until(pilot, lambda: isinstance(app.screen, ResourcesScreen)
                    and app.screen.query(OptionList), what="resources")
        app.screen.query_one(OptionList).highlighted = 1
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, TemplateScreen)
                    and len(app.screen.query(Input)) == 2, what="the form")
        boxes = list(app.screen.query(Input))
        boxes[0].value, boxes[1].value = "ann/..", "7"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: resource_attach.pending(app), what="the attachment")
        (_, got), = resource_attach.pending(app)
        assert got.uri == "memo://user/ann%2F../note/7"


@pytest.mark.slow
async def test_a_flood_of_list_changed_leaves_the_ui_responsive(tmp_path: Path) -> None:
    app = app_for(project(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await send(pilot, 'peer_changed {"n": 2000}')
        await wait_idle(pilot)
        await until(pilot, lambda: any(r.uri.startswith("memo://added/")
                                       for r in app.ws.mcp.catalogs()["peer"].resources),
                    what="the new resource")
        await send(pilot, "hello")  # the app still answers
        await wait_idle(pilot)


@pytest.mark.slow
async def test_warnings_from_the_server_log_are_notices(tmp_path: Path) -> None:
    app = app_for(project(tmp_path))
    async with app.run_test(size=(160, 50)) as pilot:
        await ready(pilot)
        await send(pilot, "peer_log_all {}")
        await wait_idle(pilot)
        await pilot.pause(0.3)
        shown = screen(pilot)
        assert "MCP server peer error" in shown
        assert "log at debug" not in shown
        no_raw_control(shown)
