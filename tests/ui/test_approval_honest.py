"""Issue 24 item 7, the observed "Approvals" failures, in the real app: a word typed at an
approval writes nothing; with a call a rule allows among the pending ones, the queue shows
each call's real state and N N denies exactly the calls it names; edited arguments are shown
as edited in the approval list, the transcript and the tool pane. Also at 80x24, with focus
in the wrong place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Static
from tui_helpers import (
    SIZE,
    ScriptedProvider,
    app_for,
    make_project,
    send,
    tool_messages,
    until,
    wait_approval,
    wait_idle,
)

from tuiapp.providers.base import StreamEnd
from tuiapp.ui.widgets import approval_keys
from tuiapp.ui.widgets.approval import ApprovalPanel
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.ui.widgets.tool_block import ToolCallBlock
from tuiapp.vocab.events import TextDelta
from tuiapp.vocab.messages import ToolCall

KEP_TOML = "[tools]\nbuiltins = false\n"
# The third call is allowed by a rule: it is decided only when its turn comes.
RULED = KEP_TOML + """
[[approval.rules]]
tool = "^shout$"
args = 'third'
action = "allow"
"""


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "proj")
    (root / "third.txt").write_text("third file\n")
    return root


def ran(proj: Path) -> list[str]:
    marker = proj / "shout.ran"
    return marker.read_text().split() if marker.exists() else []


def panel_text(panel: ApprovalPanel) -> str:
    return "\n".join(str(w.render()) for w in panel.query(Static) if w.display
                     and all(a.display for a in w.ancestors_with_self if a is not panel))


def screen_text(pilot: Pilot[Any]) -> str:
    return "\n".join(s.text for s in pilot.app.screen._compositor.render_strips())


def three_calls() -> ScriptedProvider:
    calls = [ToolCall("c0", "shout", {"path": "notes.txt"}),
             ToolCall("c1", "shout", {"path": "other.txt"}),
             ToolCall("c2", "shout", {"path": "third.txt"})]
    return ScriptedProvider([[*calls, StreamEnd("tool_use")],
                             [TextDelta("done"), StreamEnd("end_turn")]])


async def armed(pilot: Pilot[Any], panel: ApprovalPanel, path: str) -> None:
    await until(pilot, lambda: panel.display and panel.current is not None
                and panel.current.call.arguments.get("path") == path, what=path)
    await pilot.pause(approval_keys.GUARD_SECONDS + 0.15)


@pytest.mark.parametrize("word", ["aardvark", "add", "daddy", "Nanny"])
async def test_a_word_typed_at_the_approval_writes_nothing_and_lands_in_the_message_box(
        proj: Path, word: str) -> None:
    app = app_for(proj, provider=three_calls())
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        panel = await wait_approval(pilot)
        await armed(pilot, panel, "notes.txt")
        assert panel.has_focus
        await pilot.press(*word)
        await pilot.pause(0.3)
        assert (proj / "kep.toml").read_text() == KEP_TOML  # no rule written
        assert ran(proj) == [] and all(r.open for r in panel.queue)  # nothing answered
        assert app.query_one(PromptInput).text == word  # the word is kept, whole
        assert not app.ws.grants.listed()


@pytest.mark.parametrize("size", [SIZE, (80, 24)])
async def test_the_queue_shows_a_rule_allowed_call_as_such_and_N_N_denies_what_it_names(
        proj: Path, size: tuple[int, int]) -> None:
    (proj / "kep.toml").write_text(RULED)
    app = app_for(proj, provider=three_calls())
    async with app.run_test(size=size) as pilot:
        await send(pilot, "go")
        panel = await wait_approval(pilot)
        await armed(pilot, panel, "notes.txt")
        await until(pilot, lambda: "rule allows" in panel_text(panel), what="the third's state")
        rows = panel.reply.lines("c0").plain.split("\n")
        assert "waiting for you" in rows[1] and "next: a rule allows it" in rows[2], rows
        await pilot.press("N")
        await pilot.pause(0.2)
        hint = panel_text(panel)
        assert "3 calls" in hint, hint  # every call not decided yet, the ruled one too
        await pilot.press("N")
        await wait_idle(pilot)
        assert ran(proj) == []  # what it named is what it denied: third.txt did not run
        assert [m.is_error for m in tool_messages(app)] == [True, True, True]


async def test_Y_Y_names_only_what_it_allows(proj: Path) -> None:
    (proj / "kep.toml").write_text(KEP_TOML + """
[[approval.rules]]
tool = "^shout$"
args = 'third'
action = "deny"
""")
    app = app_for(proj, provider=three_calls())
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        panel = await wait_approval(pilot)
        await armed(pilot, panel, "notes.txt")
        await until(pilot, lambda: "rule denies" in panel_text(panel), what="the third's state")
        await pilot.press("Y")
        await pilot.pause(0.2)
        assert "allow 2 calls" in panel_text(panel)
        await pilot.press("Y")
        await wait_idle(pilot)
        assert sorted(ran(proj)) == ["notes.txt", "other.txt"]


@pytest.mark.parametrize("size", [SIZE, (80, 24)])
async def test_edited_arguments_are_shown_as_edited_everywhere(
        proj: Path, size: tuple[int, int]) -> None:
    app = app_for(proj, provider=three_calls())
    async with app.run_test(size=size) as pilot:
        await send(pilot, "go")
        panel = await wait_approval(pilot)
        await armed(pilot, panel, "notes.txt")
        await pilot.press("e")
        await pilot.pause(0.2)
        editor = panel.query_one(".approval-editor")
        editor.load_text(json.dumps({"path": "third.txt"}))  # type: ignore[attr-defined]
        await pilot.press("ctrl+s")
        await armed(pilot, panel, "third.txt")  # edited arguments are asked about again
        assert "edited" in panel_text(panel)
        await pilot.press("y")
        await armed(pilot, panel, "other.txt")
        assert ran(proj) == ["third.txt"]
        rows = panel.reply.lines("c1").plain.split("\n")
        assert "edited by you" in rows[0] and "third.txt" in rows[0], rows
        block = next(b for b in app.query(ToolCallBlock) if b.call.id == "c0")
        title = str(block.query_one(".tool-title", Static).render())
        assert "third.txt" in title and "notes.txt" not in title and "edited" in title
        pane_heads = [str(w.render()) for w in app.query(".tool-pane--args")]
        head = next(h for h in pane_heads if "third.txt" in h or "notes.txt" in h)
        assert "third.txt" in head and "notes.txt" not in head and "edited" in head, pane_heads


async def test_focus_in_the_wrong_place_then_a_word_writes_nothing(proj: Path) -> None:
    """80x24, the prompt has the keyboard with text in it: the approval waits, the word goes
    where the user is typing; Esc moves to the approval and `s` + a digit grants the session."""
    app = app_for(proj, provider=three_calls())
    async with app.run_test(size=(80, 24)) as pilot:
        await send(pilot, "go")
        panel = await wait_approval(pilot)
        box = app.query_one(PromptInput)
        box.focus()
        await pilot.press(*"aardvark")
        await pilot.pause(0.2)
        assert box.text == "aardvark" and (proj / "kep.toml").read_text() == KEP_TOML
        await pilot.press("escape")
        await until(pilot, lambda: panel.has_focus, what="panel focus")
        await pilot.pause(approval_keys.GUARD_SECONDS)
        await pilot.press("s")
        await pilot.pause(0.2)
        assert "the whole tool shout" in screen_text(pilot)
        whole = next(i for i, o in enumerate(panel.choices(), 1) if o.args is None)
        await pilot.press(str(whole))
        await wait_idle(pilot)
        assert sorted(ran(proj)) == ["notes.txt", "other.txt", "third.txt"]  # session grant
        assert (proj / "kep.toml").read_text() == KEP_TOML  # nothing written
        assert [g.rule.tool for g in app.ws.grants.listed()] == ["^shout$"]
