"""The footer shows how full the context is after each reply, from the provider's own input
tokens, also on an 80x24 terminal; a new session clears it."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import SIZE, ScriptedProvider, app_for, make_project, send, until, wait_idle

from tuiapp.providers.base import StreamEnd
from tuiapp.ui.widgets.status_footer import StatusFooter
from tuiapp.vocab.events import TextDelta, Usage


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


def scripted(window: int | None, *inputs: int) -> ScriptedProvider:
    provider = ScriptedProvider([[TextDelta("ok"), Usage(n, 3), StreamEnd("end_turn")]
                                 for n in inputs])
    provider.context_window = lambda: window  # type: ignore[method-assign]
    return provider


def footer_text(app: object) -> str:
    return app.query_one(StatusFooter).render().plain  # type: ignore[attr-defined]


@pytest.mark.parametrize("size", [SIZE, (80, 24)])
async def test_context_shown_after_each_reply(proj: Path, size: tuple[int, int]) -> None:
    app = app_for(proj, provider=scripted(128_000, 54_000, 112_000))
    async with app.run_test(size=size) as pilot:
        assert "ctx" not in footer_text(app) and "%" not in footer_text(app)
        await send(pilot, "one")
        await wait_idle(pilot)
        wide = size[0] >= 100
        await until(pilot, lambda: "42%" in footer_text(app), what="the context")
        assert ("ctx 42% of 128k" in footer_text(app)) == wide
        await send(pilot, "two")
        await wait_idle(pilot)
        await until(pilot, lambda: "88%" in footer_text(app), what="the context")
        assert "◆" in footer_text(app)  # the model is still shown beside it
        assert len(footer_text(app)) <= size[0]
        await pilot.press("ctrl+n")
        await until(pilot, lambda: "88%" not in footer_text(app), what="a cleared footer")


async def test_unknown_window_shows_the_tokens(proj: Path) -> None:
    app = app_for(proj, provider=scripted(None, 12_345))
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "one")
        await wait_idle(pilot)
        await until(pilot, lambda: "ctx 12.3k" in footer_text(app), what="the context")
