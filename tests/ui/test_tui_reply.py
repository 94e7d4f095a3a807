"""Long replies stay cheap: streamed into bounded Markdown chunks, cut only between blocks
(never inside a code fence); chunks far out of view are frozen (text that arrived faster than
it could be drawn starts frozen) until scrolled to."""

from __future__ import annotations

from pathlib import Path

from tui_helpers import SIZE, ScriptedProvider, app_for, make_project, send, until, wait_idle

from tuiapp.providers.base import StreamEnd
from tuiapp.ui.widgets.chunking import CHUNK_CHARS, split_markdown
from tuiapp.ui.widgets.reply import AssistantReply, ReplyMarkdown
from tuiapp.ui.widgets.transcript import Transcript
from tuiapp.vocab.events import TextDelta


def test_chunks_are_cut_between_blocks_and_never_inside_a_fence() -> None:
    code = "```\n" + "\n\n".join(f"line {i}" for i in range(400)) + "\n```\n\n"
    text = "Intro paragraph.\n\n" + code + "\n\n".join(f"Para {i} " * 8 for i in range(300))
    chunks = split_markdown(text)
    assert "".join(chunks) == text
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.count("```") % 2 == 0  # a fence is never split
    assert all(len(c) < CHUNK_CHARS * 2 for c in chunks[1:])


async def test_a_long_streamed_reply_is_chunked_frozen_and_thawed(tmp_path: Path) -> None:
    words = [f"Paragraph {i} has a few words in it. " * 3 + "\n\n" for i in range(400)]
    provider = ScriptedProvider([[*(TextDelta(w) for w in words), StreamEnd("end_turn")]])
    app = app_for(make_project(tmp_path / "proj"), provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "tell me a lot")
        await wait_idle(pilot)
        (reply,) = app.query(AssistantReply)
        assert reply.text == "".join(words)
        chunks = list(reply.query(ReplyMarkdown))
        assert len(chunks) >= 3  # bounded chunks, not one Markdown holding it all
        assert "".join(c.text for c in chunks) == reply.text
        transcript = app.query_one(Transcript)
        await until(pilot, lambda: chunks[0].frozen, what="the first chunk to freeze")
        assert not chunks[-1].frozen  # the end is in view
        assert not chunks[0].children  # frozen: no block widgets left to lay out
        transcript.scroll_home(animate=False)

        def first_chunk() -> ReplyMarkdown:  # (a frozen span is split into chunks)
            return reply.query(ReplyMarkdown).first()

        await until(pilot, lambda: not first_chunk().frozen and first_chunk().children,
                    what="the first chunk to thaw")
        assert "".join(c.text for c in reply.query(ReplyMarkdown)) == reply.text
        await until(pilot, lambda: chunks[-1].frozen, what="the last chunk to freeze")


async def test_list_items_wrap_under_their_text_and_nested_lists_keep_their_shape(
        tmp_path: Path) -> None:
    long_item = "first item " + "with many words " * 12
    text = f"Intro.\n\n- {long_item}\n- second\n  - nested\n\n1. one\n2. two\n\nAfter.\n"
    provider = ScriptedProvider([[TextDelta(text), StreamEnd("end_turn")]])
    app = app_for(make_project(tmp_path / "proj"), provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "a list please")
        await wait_idle(pilot)
        await pilot.pause()
        lines = [strip.text.rstrip() for strip in app.screen._compositor.render_strips()]
        first = next(i for i, line in enumerate(lines) if "• first item" in line)
        bullet_col = lines[first].index("•")
        # The wrapped part of the long item starts under its text, not under the bullet.
        wrapped = lines[first + 1]
        assert wrapped[bullet_col:bullet_col + 2] == "  " and wrapped[bullet_col + 2] != " ", \
            f"not indented under the text: {lines[first]!r} / {wrapped!r}"
        assert "with many words" in wrapped
        second = next(i for i, line in enumerate(lines) if "• second" in line)
        assert lines[second + 1].index("▪ nested") == bullet_col + 2  # nested, indented
        one = next(i for i, line in enumerate(lines) if "1. one" in line)
        assert "2. two" in lines[one + 1]
        assert "Intro." in "\n".join(lines) and "After." in "\n".join(lines)
