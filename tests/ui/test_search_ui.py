"""The search screen (`action_search`, palette "Search sessions"): hits with session, time and
a highlighted snippet; hostile queries give one line; hostile content stays text; enter opens
the session scrolled to that message, at 80×24 and wide."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import app_for, make_project, until, wait_idle

from tuiapp.conversation.store import Store
from tuiapp.ui.screens.search import SearchScreen
from tuiapp.vocab.events import MessageAdded
from tuiapp.vocab.messages import Message


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


def long_session(store: Store, root: Path, n: int, needle_at: int) -> str:
    sid = store.create_session(root, "offline")
    for i in range(1, n + 1):
        role = "user" if i % 2 else "assistant"
        text = f"message {i} [bold]x[/] \x1b[2J" + (" heron here" if i == needle_at else "")
        store.record(sid, MessageAdded(Message(role, text)))  # type: ignore[arg-type]
    return sid


@pytest.mark.parametrize("size", [(80, 24), (120, 35)])
async def test_search_opens_the_session_at_the_hit(proj: Path, size: tuple[int, int]) -> None:
    store = Store.open()
    target = long_session(store, proj, 400, needle_at=7)  # far above the drawn tail
    long_session(store, proj, 3, needle_at=0)
    app = app_for(proj, store=store)
    async with app.run_test(size=size) as pilot:
        await wait_idle(pilot)
        app.action_search()
        await until(pilot, lambda: isinstance(app.screen, SearchScreen), what="the screen")
        await pilot.pause()
        screen = app.screen
        for words in ['"', "NEAR(", "-", "*"]:  # hostile: one line, never a traceback
            screen.query_one("Input").value = words
            await pilot.press("enter")
            await pilot.pause()
            status = str(screen.query_one("#search-status").render())
            assert "\n" not in status.strip()
        screen.query_one("Input").value = "heron"
        await pilot.press("enter")
        await pilot.pause()
        options = screen.query_one("OptionList")
        assert options.option_count == 1
        prompt = str(options.get_option_at_index(0).prompt)
        assert target in prompt and "#7" in prompt and "heron" in prompt
        assert "\x1b" not in prompt and "[bold]x[/]" in prompt  # text, never markup
        await pilot.press("enter")
        await until(pilot, lambda: app.chat.session_id == target, what="the session to open")
        await wait_idle(pilot)
        await until(pilot, lambda: bool(app.query(".search-hit")), what="the jump")
        hit = app.query_one(".search-hit")
        assert hit.has_class("message-6")
        transcript = hit.parent
        assert transcript is not None
        await wait_idle(pilot)
        await pilot.pause()
        top = transcript.scroll_offset.y
        assert hit.virtual_region.y - 2 <= top <= hit.virtual_region.y + 2  # at the top
    store.close()


async def test_search_with_words_and_all_projects(proj: Path, tmp_path: Path) -> None:
    other = make_project(tmp_path / "other")
    store = Store.open()
    long_session(store, other, 2, needle_at=1)
    app = app_for(proj, store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_idle(pilot)
        app.action_search("heron")
        await until(pilot, lambda: isinstance(app.screen, SearchScreen), what="the screen")
        await pilot.pause()
        screen = app.screen
        await pilot.pause()
        assert screen.query_one("OptionList").option_count == 0
        await pilot.press("ctrl+a")
        await pilot.pause()
        assert screen.query_one("OptionList").option_count == 1
        await pilot.press(*"slow")  # typed words reach the box (focus is there)
        assert screen.query_one("Input").value.endswith("slow")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, SearchScreen), what="close")
    store.close()


async def test_slash_search_opens_the_screen_with_the_words(proj: Path) -> None:
    from tui_helpers import send

    store = Store.open()
    long_session(store, proj, 4, needle_at=3)
    app = app_for(proj, store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_idle(pilot)
        await send(pilot, '/search heron "NEAR')
        await until(pilot, lambda: isinstance(app.screen, SearchScreen), what="the screen")
        await pilot.pause()
        await pilot.pause()
        screen = app.screen
        assert screen.query_one("Input").value == 'heron "NEAR'
        assert app.chat.history == []  # never sent to the model
    store.close()
