"""The model picker lists what the servers' `/models` return, after the configured models;
an unreachable server is one line; also at 80x24."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from fakes.llm_server import FakeLLMServer
from textual.command import CommandList, CommandPalette
from tui_helpers import SIZE, app_for, make_project, until

from tuiapp.providers import model_lists


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    model_lists.forget()
    return make_project(tmp_path / "proj")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lines(app: object) -> list[str]:
    found = app.screen.query(CommandList)  # type: ignore[attr-defined]
    if not found:
        return []
    listing = found.first()
    return [str(listing.get_option_at_index(i).prompt).splitlines()[0]
            for i in range(listing.option_count)]


@pytest.mark.parametrize("size", [SIZE, (80, 24)])
async def test_picker_lists_server_models_after_the_configured_ones(
        proj: Path, size: tuple[int, int]) -> None:
    with FakeLLMServer(then={"text": "ok"}) as server:
        server.models = {"data": [{"id": "big"}, {"id": "small"}, {"id": "x\x1b]52;c;aGk=\x07"}]}
        (proj / "kep.toml").write_text(
            '[tools]\nbuiltins = false\n'
            f'[providers.fake]\napi = "chat"\nbase_url = "{server.base_url}"\n'
            'default_model = "small"\n'
            f'[providers.down]\napi = "chat"\nbase_url = "http://127.0.0.1:{closed_port()}/v1"\n'
            'default_model = "m"\n')
        app = app_for(proj)
        async with app.run_test(size=size) as pilot:
            app.choose_model()
            await until(pilot, lambda: isinstance(app.screen, CommandPalette))
            await until(pilot, lambda: any("fake/big" in t for t in lines(app)),
                        what="the listed models")
            await until(pilot, lambda: any(t.startswith("down: cannot reach") for t in lines(app)),
                        what="the unreachable line")
            shown = lines(app)
            assert shown.index("fake/small") < shown.index("fake/big")  # configured first
            assert shown.count("fake/small") == 1
            assert sum(t.startswith("down:") for t in shown) == 1
            assert not any("\x1b" in t or "52;c" in t for t in shown)
            await pilot.press(*"fake/big")
            await pilot.pause(0.5)
            await pilot.press("enter")
            await until(pilot, lambda: app.chat.model == "fake/big", what="the switch")
        assert sum(r.method == "GET" for r in server.requests) == 1
