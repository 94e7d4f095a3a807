"""Issue 28 item 9's hostile `@` files in the app (the attach rules are unit-tested in
test_mentions.py): a 2 GB sparse file, a FIFO and an image that lies about its type are offered
by the completion list like any file, and sending them is one line each, never a hang, with
the message still sent; a file name with ESC or markup is shown as text at every size."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from test_mentions_ui import listed, options
from tui_helpers import ScriptedProvider, app_for, make_project, send, until, wait_idle

from tuiapp.providers.base import StreamEnd
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.ui.widgets.transcript import Transcript
from tuiapp.vocab.events import TextDelta

SIZES = [(80, 24), (160, 50)]
JPEG = b"\xff\xd8\xff\xe0" + b"\0" * 64


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "proj")
    with open(root / "big.bin", "wb") as f:
        f.truncate(2 * 1024**3)  # sparse: no disk used
    os.mkfifo(root / "pipe.txt")
    (root / "liar.png").write_text("I am text pretending to be a picture\n")
    (root / "photo.png").write_bytes(JPEG)  # a jpeg named png: sent as what it is
    return root


def transcript_text(app: object) -> str:
    t = app.query_one(Transcript)  # type: ignore[attr-defined]
    return "\n".join(str(w.render()) for w in t.children if hasattr(w, "render"))


@pytest.mark.parametrize("size", SIZES)
async def test_big_fifo_and_lying_files_are_offered_then_refused_in_one_line_each(
        proj: Path, size: tuple[int, int]) -> None:
    provider = ScriptedProvider([[TextDelta("ok"), StreamEnd("end_turn")]])
    app = app_for(proj, provider=provider)
    async with app.run_test(size=size) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        prompt = app.query_one(PromptInput)
        prompt.focus()
        await pilot.press("@", "p", "i", "p")
        await until(pilot, lambda: listed(app), what="the list")
        assert "pipe.txt" in options(app)  # listing a FIFO never opens it
        await pilot.press("escape")
        prompt.clear()
        await send(pilot, "look at @big.bin @pipe.txt @liar.png @photo.png please")
        await wait_idle(pilot)  # the FIFO did not block the send
        [request] = provider.requests
        user = request[-1]
        assert [(a.name, a.media_type) for a in user.attachments] == [
            ("photo.png", "image/jpeg")]
        assert base64.b64decode(user.attachments[0].data) == JPEG
        shown = transcript_text(app)
        for name, why in (("big.bin", "too big"), ("pipe.txt", "not a regular file"),
                          ("liar.png", "not a png, jpeg, gif or webp")):
            lines = [ln for ln in shown.splitlines() if f"@{name}" in ln and why in ln]
            assert len(lines) == 1, (name, shown)
        assert app.is_running


@pytest.mark.parametrize("size", SIZES)
async def test_hostile_names_in_the_list_are_text_at_every_size(
        proj: Path, size: tuple[int, int]) -> None:
    for name in ("\x1b[2Jclear.md", "[b]bold.md", "[@click=app.quit]x.md", "\x07bell.md"):
        (proj / name).write_text("x\n")
    app = app_for(proj)
    async with app.run_test(size=size) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        app.query_one(PromptInput).focus()
        await pilot.press("@", "m", "d")
        await until(pilot, lambda: len(options(app)) >= 4 if listed(app) else False,
                    what="the list")
        shown = "\n".join(options(app))
        assert "\x1b" not in shown and "\x07" not in shown
        assert "[b]bold.md" in shown and "[@click=app.quit]x.md" in shown
        await pilot.press("tab")
        await pilot.pause(0.2)
        assert app.is_running and "\x1b" not in app.query_one(PromptInput).text
