"""The palette's model options (temperature, longest reply, reasoning effort) apply to the
session's next request, also on an 80x24 terminal, and survive a switch within a provider."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.llm_server import FakeLLMServer
from textual.command import CommandPalette
from tui_helpers import SIZE, app_for, make_project, send, until, wait_idle


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


async def pick(pilot: object, entry: str, choice: str) -> None:
    app = pilot.app  # type: ignore[attr-defined]
    await pilot.press("ctrl+p")  # type: ignore[attr-defined]
    await until(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette")
    await pilot.press(*entry)  # type: ignore[attr-defined]
    await pilot.pause(0.3)  # type: ignore[attr-defined]
    await pilot.press("enter")  # type: ignore[attr-defined]
    await until(pilot, lambda: isinstance(app.screen, CommandPalette), what="the choices")
    await pilot.pause(0.2)  # type: ignore[attr-defined]
    await pilot.press(*choice)  # type: ignore[attr-defined]
    await pilot.pause(0.3)  # type: ignore[attr-defined]
    await pilot.press("enter")  # type: ignore[attr-defined]
    await until(pilot, lambda: not isinstance(app.screen, CommandPalette), what="closed")


@pytest.mark.slow
@pytest.mark.parametrize("size", [SIZE, (80, 24)])
async def test_palette_options_reach_the_next_request(proj: Path,
                                                      size: tuple[int, int]) -> None:
    with FakeLLMServer(then={"text": "ok"}) as server:
        (proj / "kep.toml").write_text(
            '[tools]\nbuiltins = false\n[providers.fake]\napi = "chat"\n'
            f'base_url = "{server.base_url}"\n'
            '[providers.fake.models."small"]\ntemperature = 0.7\n')
        app = app_for(proj, model="fake/small")
        async with app.run_test(size=size) as pilot:
            await send(pilot, "first")
            await wait_idle(pilot)
            await pick(pilot, "temperature", "0.2")
            assert app.chat.provider.temperature == 0.2
            await pick(pilot, "max output tokens", "4,096")
            await send(pilot, "second")
            await wait_idle(pilot)
            app.switch_model("fake/other")
            await pilot.pause()
            await send(pilot, "third")
            await wait_idle(pilot)
        first, second, third = (r.body for r in server.requests)
    assert first["temperature"] == 0.7 and "max_tokens" not in first
    assert (second["temperature"], second["max_tokens"]) == (0.2, 4096)
    assert (third["temperature"], third["max_tokens"]) == (0.2, 4096)
