"""Reasoning in the TUI: a collapsed, dimmed thinking block above the answer (ctrl+b or a
click opens it), kept for a resumed session; stop notices; the footer's tokens and cost,
carried over when a session is resumed."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import SIZE, ScriptedProvider, app_for, make_project, send, until, wait_idle

from tuiapp.conversation.store import Store
from tuiapp.providers.base import StreamEnd
from tuiapp.settings.config_types import ProviderConfig
from tuiapp.ui.widgets.reply import AssistantReply
from tuiapp.ui.widgets.status_footer import StatusFooter
from tuiapp.ui.widgets.thinking import ThinkingBlock
from tuiapp.ui.widgets.transcript import NoticeLine, Transcript
from tuiapp.vocab.events import ReasoningDelta, TextDelta, Usage
from tuiapp.vocab.messages import Reasoning


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


@pytest.fixture(autouse=True)
def collapsed_by_default() -> None:
    ThinkingBlock.open_by_default = False


def thinking_reply(*thoughts: str, answer: str = "The answer.") -> list[object]:
    return [*(ReasoningDelta(t) for t in thoughts), TextDelta(answer),
            Reasoning("chat|scripted|scripted", "".join(thoughts)), Usage(10, 5),
            StreamEnd("end_turn")]


async def test_thinking_is_a_collapsed_block_above_the_answer(proj: Path) -> None:
    long = "step one.\n" + "word " * 3000 + "\x1b[31mred\x07\nlast line of thought"
    app = app_for(proj, provider=ScriptedProvider([thinking_reply(long)]))
    async with app.run_test(size=(80, 24)) as pilot:
        await send(pilot, "why?")
        await wait_idle(pilot)
        reply = app.query_one(AssistantReply)
        block = reply.query_one(ThinkingBlock)
        assert reply.children[0] is block  # above the answer
        assert reply.text == "The answer."  # thinking is not part of the answer
        await until(pilot, lambda: "thought (" in str(block.render()), what="redraw")
        shown = str(block.render())
        assert "last line of thought" in shown and "word word" not in shown
        assert block.outer_size.height <= 2  # one line, collapsed
        await pilot.press("ctrl+b")
        await pilot.pause()
        opened = str(block.render())
        assert "step one." in opened and "\x1b" not in opened and "\x07" not in opened
        assert block.outer_size.height > 10
        app.query_one(Transcript).scroll_to_widget(block, top=True, animate=False)
        await pilot.pause()
        await pilot.click(block, offset=(4, 0))
        await pilot.pause()
        assert block.outer_size.height <= 2


async def test_notice_for_an_unfinished_reply(proj: Path) -> None:
    provider = ScriptedProvider([[TextDelta("cut sh"), StreamEnd("max_tokens")]])
    app = app_for(proj, provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "long story")
        await wait_idle(pilot)
        notices = [str(n.render()) for n in app.query(NoticeLine)]
        assert any("max_tokens" in n for n in notices)
        assert app.query_one(AssistantReply).text == "cut sh"


async def test_footer_tokens_cost_and_resume_keeps_them(proj: Path) -> None:
    store = Store.open()
    priced = ScriptedProvider([thinking_reply("hmm")])
    priced.config = ProviderConfig("scripted", "chat",
                                   prices={"": {"input": 2.0, "output": 8.0}})
    first = app_for(proj, store=store, provider=priced)
    async with first.run_test(size=SIZE) as pilot:
        await send(pilot, "hi")
        await wait_idle(pilot)
        footer = str(first.query_one(StatusFooter).render())
        assert "↑10 ↓5 tokens · $0.0001" in footer
        session_id = first.chat.session_id
    assert session_id is not None

    history = store.load_messages(session_id)
    again = app_for(proj, store=store, session_id=session_id, history=history,
                    provider=ScriptedProvider([thinking_reply("more")]))
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "↑10 ↓5 tokens" in str(again.query_one(StatusFooter).render())
        # The resumed reply shows its thinking too.
        block = again.query_one(Transcript).query_one(ThinkingBlock)
        assert "hmm" in str(block.render())
        await send(pilot, "again")
        await wait_idle(pilot)
        assert "↑20 ↓10 tokens" in str(again.query_one(StatusFooter).render())
    store.close()


async def test_footer_usage_fits_a_narrow_terminal(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=(80, 24)) as pilot:
        footer = app.query_one(StatusFooter)
        footer.model = "openai/gpt-5-mini"  # (a long name alone is the narrow-terminal work)
        footer.session_id = "abcdef12"
        footer.usage = Usage(123_456, 45_678, 100_000, 30_000, 1.234)
        await pilot.pause()
        line = str(footer.render())
        assert "↑123k ↓45.7k · $1.23" in line and "cached" not in line
        assert footer.render().cell_length <= 80
    wide = app_for(proj)
    async with wide.run_test(size=(160, 24)) as pilot:
        footer = wide.query_one(StatusFooter)
        footer.usage = Usage(12_345, 900, 8_000, 640, 0.0123)
        await pilot.pause()
        assert "↑12.3k (8.0k cached) ↓900 (640 reasoning) tokens · $0.0123" in str(
            footer.render())


async def test_two_megabytes_of_thinking_render_bounded(proj: Path) -> None:
    from tuiapp.ui.widgets.thinking import PREVIEW_CHARS, SHOWN_CHARS

    huge = "x" * 2_000_000  # one line, no spaces
    deltas = [huge[i:i + 4096] for i in range(0, len(huge), 4096)]  # ~500 deltas
    app = app_for(proj, provider=ScriptedProvider([thinking_reply(*deltas, answer="ok")]))
    async with app.run_test(size=(80, 24)) as pilot:
        await send(pilot, "think hard")
        await wait_idle(pilot)
        block = app.query_one(ThinkingBlock)
        assert len(block.text) == 2_000_000
        assert len(str(block.render())) < PREVIEW_CHARS + 100
        await pilot.press("ctrl+b")
        await pilot.pause()
        assert SHOWN_CHARS <= len(str(block.render())) < SHOWN_CHARS + 100


async def test_real_provider_thinking_and_the_palette_reasoning_level(proj: Path) -> None:
    from fakes import recorded
    from fakes.llm_server import FakeLLMServer

    with FakeLLMServer([recorded.mistral_list_content(), {"text": "ok"}]) as server:
        (proj / "kep.toml").write_text(
            '[tools]\nbuiltins = false\n[providers.fake]\napi = "chat"\n'
            f'base_url = "{server.base_url}"\n')
        app = app_for(proj, model="fake/magistral-medium-2509")
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "2+2?")
            await wait_idle(pilot)
            reply = app.query_one(AssistantReply)
            assert reply.text == "The answer is 4."
            assert "Simple arithmetic." in reply.query_one(ThinkingBlock).text
            from tuiapp.ui.commands import kep_commands

            titles = [c.title for c in kep_commands(app)]
            assert "Reasoning effort" in titles and "Show or hide thinking" in titles
            app.set_reasoning("high")  # what the palette's "Reasoning effort" entry calls
            await send(pilot, "again")
            await wait_idle(pilot)
        first, second = (r.body for r in server.requests)
    assert "reasoning_effort" not in first and second["reasoning_effort"] == "high"
