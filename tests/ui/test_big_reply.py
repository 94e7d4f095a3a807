"""A reply of any size is drawn in bounded time: one huge delta (a 2 MB line without a space,
a 2 MB paragraph) shows its end within a generous bound, and ctrl+q and Esc work while it
streams. Chunking cuts blocks too long to keep whole, and bridges a cut inside a code fence."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.pilot import Pilot
from tui_helpers import SIZE, ScriptedProvider, app_for, make_project, send, until, wait_idle

from tuiapp.providers.base import Provider, StreamEnd, StreamItem
from tuiapp.settings.config_types import ProviderConfig
from tuiapp.ui.widgets.chunking import HARD_CHARS, split_reply
from tuiapp.ui.widgets.reply import AssistantReply, ReplyMarkdown
from tuiapp.ui.widgets.status_footer import StatusFooter
from tuiapp.vocab.events import TextDelta
from tuiapp.vocab.messages import Message
from tuiapp.vocab.tool_specs import ToolSpec

MARK = "ENDMARK"
BOUND = 10.0  # seconds: generous (a loaded 2-core machine); it takes about 1 s alone
MB2 = 2_000_000


def _screen_text(pilot: Pilot[Any]) -> str:
    return "\n".join(strip.text for strip in pilot.app.screen._compositor.render_strips())


def _press(pilot: Pilot[Any], key: str) -> None:
    """A key as the terminal driver delivers it (Pilot.press would wait for the app to idle,
    which is what is being tested)."""
    event = events.Key(key, None)
    event.set_sender(pilot.app)
    pilot.app._driver.send_message(event)  # type: ignore[union-attr]


class HangingProvider(Provider):
    """One huge delta, then a model that never finishes (Esc must still stop it)."""

    def __init__(self, text: str) -> None:
        super().__init__(ProviderConfig("hang", "chat"), "hang")
        self.text = text

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec],
                     system: str | None) -> AsyncIterator[StreamItem]:
        yield TextDelta(self.text)
        await asyncio.sleep(3600)
        yield StreamEnd("end_turn")


# ---- chunking (pure) ------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "x" * MB2,  # one line, no space
    ("word " * 20 + "\n") * (MB2 // 101),  # one paragraph of many lines
    "word " * (MB2 // 5),  # one line of words
], ids=["no-space", "one-paragraph", "one-line-of-words"])
def test_a_huge_block_is_cut_into_bounded_chunks(text: str) -> None:
    pieces = split_reply(text)
    assert "".join(chunk for _, chunk in pieces) == text  # nothing lost or repeated
    assert len(pieces) > 100
    assert max(len(chunk) for _, chunk in pieces) <= HARD_CHARS


def test_a_cut_inside_a_huge_code_fence_reopens_the_fence() -> None:
    code = "".join(f"print({i})  # {'#' * 30}\n" for i in range(20_000))
    after = "".join(f"After the code, paragraph {i}.\n\n" for i in range(500))
    text = "Intro.\n\n```python\n" + code + "```\n\n" + after
    pieces = split_reply(text)
    assert "".join(chunk for _, chunk in pieces) == text
    assert max(len(chunk) for _, chunk in pieces) <= HARD_CHARS
    inside = [(opening, chunk) for opening, chunk in pieces[1:] if chunk.startswith("print(")]
    assert inside and all(opening == "```python\n" for opening, _ in inside)
    # Past the fence's end nothing is reopened (the text after it is Markdown again).
    assert pieces[-1][0] == "" and pieces[-1][1].startswith("After the code")


def test_cuts_fall_on_newlines_then_spaces() -> None:
    lines = ("a" * 70 + "\n") * 1000
    assert all(chunk.endswith("\n") for _, chunk in split_reply(lines)[:-1])
    words = "word " * 20_000
    assert all(chunk.endswith(" ") for _, chunk in split_reply(words)[:-1])


# ---- the TUI ----------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "x" * (MB2 - len(MARK)) + MARK,
    ("the quick brown fox " * 4 + "\n") * (MB2 // 81) + MARK,
], ids=["no-space-no-newline", "one-paragraph"])
async def test_a_2mb_single_delta_is_drawn_within_the_bound(tmp_path: Path, text: str) -> None:
    provider = ScriptedProvider([[TextDelta(text), StreamEnd("end_turn")]])
    app = app_for(make_project(tmp_path / "proj"), provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        app.query_one("#prompt").load_text("go")  # type: ignore[attr-defined]
        app.query_one("#prompt").focus()
        started = time.monotonic()
        _press(pilot, "enter")
        await until(pilot, lambda: MARK in _screen_text(pilot), timeout=BOUND,
                    what="the end of the reply on screen")
        assert time.monotonic() - started < BOUND
        await wait_idle(pilot)
        (reply,) = app.query(AssistantReply)
        assert reply.text == text
        assert "".join(c.text for c in reply.query(ReplyMarkdown)) == text


async def test_ctrl_q_quits_while_a_huge_reply_streams(tmp_path: Path) -> None:
    app = app_for(make_project(tmp_path / "proj"), provider=HangingProvider("y" * 10_000_000))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        app.query_one("#prompt").load_text("go")  # type: ignore[attr-defined]
        _press(pilot, "enter")
        await until(pilot, lambda: bool(app.query(AssistantReply).results()), what="the reply")
        started = time.monotonic()
        _press(pilot, "ctrl+q")
        await until(pilot, lambda: app.return_code is not None, timeout=BOUND,
                    what="ctrl+q to be handled")
        assert time.monotonic() - started < 5


async def test_esc_interrupts_while_a_huge_reply_streams(tmp_path: Path) -> None:
    app = app_for(make_project(tmp_path / "proj"), provider=HangingProvider("z" * MB2))
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await until(pilot, lambda: bool(app.query(AssistantReply).results()), what="the reply")
        _press(pilot, "escape")
        await until(pilot, lambda: not app.busy, timeout=BOUND, what="the turn to stop")
        await until(pilot, lambda: app.query_one(StatusFooter).state == "idle",
                    what="the footer to go idle")
        (reply,) = app.query(AssistantReply)
        await until(pilot, lambda: reply.interrupted and reply.done, timeout=BOUND,
                    what="the reply to be marked interrupted")


async def test_a_line_cut_into_chunks_is_drawn_without_gaps(tmp_path: Path) -> None:
    from tuiapp.ui.widgets.transcript import Transcript
    from tuiapp.vocab.messages import Message as Msg

    text = "x" * 25_000  # one line: cut twice, mid-line
    app = app_for(make_project(tmp_path / "proj"),
                  history=[Msg("user", "hi"), Msg("assistant", text)])
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        (reply,) = app.query(AssistantReply)
        chunks = list(reply.query(ReplyMarkdown))
        assert len(chunks) == 3 and chunks[1].has_class("-continued")
        assert chunks[0].has_class("-joined") and not chunks[2].has_class("-joined")
        transcript = app.query_one(Transcript)
        await until(pilot, lambda: chunks[1].region.height > 0, what="layout")
        transcript.scroll_to(y=chunks[1].virtual_region.y - 10, animate=False)
        await until(pilot, lambda: not chunks[0].frozen and not chunks[1].frozen,
                    what="the chunks around the cut to be drawn")
        await pilot.pause()
        rows = [line.strip(" ▕▏▌│▁▂▃▄▅▆▇█") for line in screen_rows(pilot)]
        xs = [i for i, row in enumerate(rows) if row.startswith("xxxx")]
        assert len(xs) > 20
        assert xs == list(range(xs[0], xs[-1] + 1)), "a gap where the line was cut"


def screen_rows(pilot: Pilot[Any]) -> list[str]:
    return [strip.text for strip in pilot.app.screen._compositor.render_strips()]


async def test_after_a_huge_reply_the_next_turn_is_shown(tmp_path: Path) -> None:
    provider = ScriptedProvider([[TextDelta("q" * MB2), StreamEnd("end_turn")],
                                 [TextDelta("the second answer"), StreamEnd("end_turn")]])
    app = app_for(make_project(tmp_path / "proj"), provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "first")
        await wait_idle(pilot)
        await send(pilot, "second")
        await until(pilot, lambda: "the second answer" in _screen_text(pilot), timeout=BOUND,
                    what="the second reply on screen")
        assert "second" in _screen_text(pilot)


async def test_a_flood_larger_than_one_flush_is_drawn_whole_and_recorded(
        tmp_path: Path) -> None:
    """5 MB in one delta is drawn a FLUSH_MAX at a time: nothing lost or doubled at the
    seams, a code fence open across a seam still draws as code at the end, and the session
    store (written by its thread) has the whole reply once the turn is over."""
    from tuiapp.conversation.store import Store
    from tuiapp.ui.widgets.reply import FLUSH_MAX

    text = ("prose " * 30 + "\n\n") * (FLUSH_MAX // 182) + "```python\n" + (
        "x = 1  # code\n" * (FLUSH_MAX // 10)) + MARK
    assert len(text) > 2 * FLUSH_MAX
    store = Store.open(tmp_path / "sessions.db")
    provider = ScriptedProvider([[TextDelta(text), StreamEnd("end_turn")]])
    app = app_for(make_project(tmp_path / "proj"), provider=provider, store=store)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await until(pilot, lambda: MARK in _screen_text(pilot), timeout=BOUND,
                    what="the end of the reply on screen")
        await wait_idle(pilot)
        (reply,) = app.query(AssistantReply)
        chunks = list(reply.query(ReplyMarkdown))
        assert "".join(c.text for c in chunks) == text
        assert chunks[-1].drawn_source.startswith("```python\n")  # still code at the end
        sid = app.chat.session_id
        assert sid is not None
        app.chat.settle()
        with Store.open(store.path) as other:
            assert [m.content for m in other.load_messages(sid)] == ["go", text]
    store.close()


async def test_esc_during_a_flood_of_several_flushes_keeps_all_of_it(tmp_path: Path) -> None:
    text = "w " * 2_500_000  # 5 MB: more than two flushes' worth
    app = app_for(make_project(tmp_path / "proj"), provider=HangingProvider(text))
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await until(pilot, lambda: bool(app.query(AssistantReply).results()), what="the reply")
        _press(pilot, "escape")
        await until(pilot, lambda: not app.busy, timeout=BOUND, what="the turn to stop")
        (reply,) = app.query(AssistantReply)
        await until(pilot, lambda: reply.interrupted and reply.done, timeout=BOUND,
                    what="the reply to be marked interrupted")
        assert "".join(c.text for c in reply.query(ReplyMarkdown)) == text


async def test_the_top_of_a_flood_is_drawn_when_scrolled_to_with_few_widgets(
        tmp_path: Path) -> None:
    """A flood starts as frozen spans; scrolled to, a span is split a few ways at a time
    (each part split again if in view), never into all its chunks at once."""
    from tuiapp.ui.widgets.transcript import Transcript

    text = "FIRSTWORDS here.\n\n" + ("filler words in a paragraph " * 40 + "\n\n") * 4000
    provider = ScriptedProvider([[TextDelta(text), StreamEnd("end_turn")]])
    app = app_for(make_project(tmp_path / "proj"), provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await wait_idle(pilot)
        (reply,) = app.query(AssistantReply)
        app.query_one(Transcript).scroll_home(animate=False)
        await until(pilot, lambda: "FIRSTWORDS" in _screen_text(pilot), timeout=BOUND,
                    what="the first words on screen")
        await wait_idle(pilot)
        chunks = list(reply.query(ReplyMarkdown))
        assert "".join(c.text for c in chunks) == text
        # A span still frozen, shown now: split SPLIT_WAYS ways, not into its ~40 chunks.
        span = next(c for c in reversed(chunks) if c.frozen and len(c.text) > 4 * HARD_CHARS)
        await span.thaw()
        await pilot.pause()
        after = list(reply.query(ReplyMarkdown))
        assert len(chunks) < len(after) <= len(chunks) + 8  # (SPLIT_WAYS, not ~40)
        assert "".join(c.text for c in after) == text
