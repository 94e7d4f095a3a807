"""The approval queue driven from the keyboard (issue 12, item 5), on the offline model's
several-calls-in-one-reply: every pending call listed, the next call gets the keyboard by itself,
stray typing never answers, and answers that write config or cover several calls need a second
key."""

from __future__ import annotations

import asyncio
import tomllib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
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

from tuiapp.providers.base import StreamEnd, StreamItem
from tuiapp.ui.app import KepApp
from tuiapp.ui.widgets import approval_keys as approval_module
from tuiapp.ui.widgets.approval import ApprovalPanel
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.vocab.events import TextDelta
from tuiapp.vocab.messages import Message, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

THREE = "shout notes.txt; shout other.txt; shout third.txt"
KEP_TOML = "[tools]\nbuiltins = false\n"


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "proj")
    (root / "third.txt").write_text("third file\n")
    return root


def ran(proj: Path) -> list[str]:
    marker = proj / "shout.ran"
    return marker.read_text().split() if marker.exists() else []


def panel_text(panel: ApprovalPanel) -> str:
    """What the panel shows (every visible Static, buttons included)."""
    from textual.widgets import Static

    return "\n".join(str(w.render()) for w in panel.query(Static) if w.display
                     and all(a.display for a in w.ancestors_with_self if a is not panel))


def current_path(panel: ApprovalPanel) -> str | None:
    req = panel.current
    return req.call.arguments.get("path") if req is not None else None


async def ready(pilot: Pilot[Any], panel: ApprovalPanel, path: str) -> None:
    """Until `path`'s approval is shown and has been on screen longer than the guard."""
    await until(pilot, lambda: panel.display and current_path(panel) == path, what=path)
    await pilot.pause(getattr(approval_module, "GUARD_SECONDS", 0.5) + 0.15)


def prompt(app: KepApp) -> PromptInput:
    return app.query_one(PromptInput)


@pytest.mark.slow
async def test_y_y_y_answers_three_queued_calls_in_order(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, THREE)
        panel = await wait_approval(pilot)
        for path in ("notes.txt", "other.txt", "third.txt"):
            await ready(pilot, panel, path)
            assert panel.has_focus, f"the approval of {path} does not have the keyboard"
            await pilot.press("y")
        await wait_idle(pilot)
        assert sorted(ran(proj)) == ["notes.txt", "other.txt", "third.txt"]
        assert [m.is_error for m in tool_messages(app)] == [False, False, False]
        assert prompt(app).text == ""  # no y went into the message box
        assert prompt(app).has_focus and not panel.display


async def test_every_pending_call_is_listed_with_its_arguments(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, THREE)
        panel = await wait_approval(pilot)
        shown = panel_text(panel)
        for n, path in enumerate(("notes.txt", "other.txt", "third.txt"), 1):
            assert f"{n}/3" in shown and path in shown, shown
        await ready(pilot, panel, "notes.txt")
        await pilot.press("y")
        await ready(pilot, panel, "other.txt")
        shown = panel_text(panel)
        assert "third.txt" in shown and "allowed" in shown  # the answered one says so


async def test_Y_needs_a_second_key_and_names_what_it_covers(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, THREE)
        panel = await wait_approval(pilot)
        await ready(pilot, panel, "notes.txt")
        await pilot.press("Y")
        await pilot.pause(0.3)
        assert ran(proj) == [] and current_path(panel) == "notes.txt"
        assert "Press Y again" in panel_text(panel) and "3 calls" in panel_text(panel)
        await pilot.press("Y")
        await wait_idle(pilot)
        assert sorted(ran(proj)) == ["notes.txt", "other.txt", "third.txt"]


async def test_N_then_another_key_cancels(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, THREE)
        panel = await wait_approval(pilot)
        await ready(pilot, panel, "notes.txt")
        await pilot.press("N", "x")  # not a second N: typing, which goes to the message box
        await pilot.pause(0.2)
        assert "again" not in panel_text(panel) and prompt(app).text == "Nx"
        assert all(r.open for r in panel.queue) and ran(proj) == []
        await pilot.press("escape")  # (from the message box) back to the approval
        await until(pilot, lambda: panel.has_focus, what="panel focus")
        await pilot.press("N")
        await pilot.pause(0.2)
        assert panel.current is not None and current_path(panel) == "notes.txt"
        await pilot.press("enter")  # Enter confirms too
        await wait_idle(pilot)
        assert ran(proj) == [] and [m.is_error for m in tool_messages(app)] == [True] * 3


@pytest.mark.slow
@pytest.mark.parametrize(("key", "action"), [("a", "allow"), ("d", "deny")])
async def test_a_and_d_write_kep_toml_only_after_a_digit(
        proj: Path, key: str, action: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(approval_module, "CONFIRM_SECONDS", 1.0, raising=False)
    monkeypatch.setattr(approval_module, "CHOOSE_SECONDS", 1.0)
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "shout notes.txt")
        panel = await wait_approval(pilot)
        await ready(pilot, panel, "notes.txt")
        await pilot.press(key)
        await pilot.pause(1.3)  # too late: the first press has expired
        await pilot.press("1")  # so this is typing: it goes to the message box
        await pilot.pause(0.3)
        assert (proj / "kep.toml").read_text() == KEP_TOML and prompt(app).text == "1"
        await pilot.press("escape")
        await until(pilot, lambda: panel.has_focus, what="panel focus")
        await pilot.press(key)
        await pilot.pause(0.3)
        screen = "\n".join(s.text for s in app.screen._compositor.render_strips())
        assert "press the number" in panel_text(panel) and "the whole tool shout" in screen
        whole = next(i for i, o in enumerate(panel.choices(), 1) if o.args is None)
        await pilot.press(str(whole))
        await wait_idle(pilot)
        data = tomllib.loads((proj / "kep.toml").read_text())
        rule = data["approval"]["rules"][0]
        assert (rule["tool"], rule["action"]) == ("^shout$", action) and "args" not in rule
        assert "notes.txt" in rule["comment"] and rule["added"]


@pytest.mark.parametrize("typed", ["all good", "do it now", "yes please"])
async def test_typing_as_an_approval_appears_answers_nothing(
        proj: Path, typed: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The prompt was idle, so the approval takes the keyboard; the user starts a message
    right then. Nothing is answered, nothing written, and the text ends up in the prompt.
    (The guard is widened so a loaded test machine cannot make a key late.)"""
    monkeypatch.setattr(approval_module, "GUARD_SECONDS", 60.0)
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, THREE)
        panel = await wait_approval(pilot, armed=False)
        await pilot.press(*typed)
        await pilot.pause(1.0)
        assert ran(proj) == []
        assert panel.current is not None and current_path(panel) == "notes.txt"
        assert all(r.open for r in panel.queue)
        assert (proj / "kep.toml").read_text() == KEP_TOML
        assert prompt(app).text == typed  # nothing lost
        assert not any(e.role == "tool" for e in app.chat.history)


class GatedProvider(ScriptedProvider):
    """Holds its first reply (three shout calls) until the test opens the gate."""

    def __init__(self) -> None:
        calls = [ToolCall(f"c{i}", "shout", {"path": p}) for i, p in
                 enumerate(("notes.txt", "other.txt", "third.txt"))]
        super().__init__([[*calls, StreamEnd("tool_use")],
                          [TextDelta("done"), StreamEnd("end_turn")]])
        self.gate = asyncio.Event()

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec],
                     system: str | None) -> AsyncIterator[StreamItem]:
        await self.gate.wait()
        async for item in super().stream(messages, tools, system):
            yield item


@pytest.mark.parametrize("typed", ["all good", "do it now", "yes please"])
async def test_typing_in_the_message_box_never_answers(proj: Path, typed: str) -> None:
    """The user is writing the next message when the approval appears: the keyboard stays in
    the prompt, all of it lands there, and Esc then moves to the approval."""
    provider = GatedProvider()
    app = app_for(proj, provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        box = prompt(app)
        await until(pilot, lambda: box.has_focus and app.busy, what="the turn")
        head, tail = typed[:3], typed[3:]
        await pilot.press(*head)
        provider.gate.set()
        panel = await wait_approval(pilot, armed=False)
        await pilot.pause(getattr(approval_module, "GUARD_SECONDS", 0.5) + 0.2)  # after it too
        await pilot.press(*tail)
        await pilot.pause(0.3)
        assert box.has_focus and box.text == typed
        assert ran(proj) == [] and all(r.open for r in panel.queue)
        assert (proj / "kep.toml").read_text() == KEP_TOML
        assert "Esc" in panel_text(panel)  # the hint says how to get there
        await pilot.press("escape")
        await until(pilot, lambda: panel.has_focus, what="focus on the approval")
        await pilot.press("y")
        await ready(pilot, panel, "other.txt")
        assert ran(proj) == ["notes.txt"] and box.text == typed


async def test_esc_in_the_panel_goes_back_to_the_prompt_and_esc_there_comes_back(
        proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, THREE)
        panel = await wait_approval(pilot)
        await ready(pilot, panel, "notes.txt")
        await pilot.press("escape")
        await until(pilot, lambda: prompt(app).has_focus, what="prompt focus")
        await pilot.press("y")  # types into the prompt: no answer
        await pilot.pause(0.2)
        assert prompt(app).text == "y" and ran(proj) == []
        await pilot.press("escape")
        await until(pilot, lambda: panel.has_focus, what="panel focus")
        await pilot.press("y")
        await ready(pilot, panel, "other.txt")
        assert ran(proj) == ["notes.txt"]


async def test_all_keys_are_readable_at_80x24(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=(80, 24)) as pilot:
        await send(pilot, THREE)
        panel = await wait_approval(pilot)
        await ready(pilot, panel, "notes.txt")
        await pilot.pause(0.2)
        screen = "\n".join(s.text for s in app.screen._compositor.render_strips())
        for label in ("y allow", "n deny", "s session", "a always", "d never", "e edit",
                      "Y all", "N none"):
            assert label in screen, f"{label!r} not on screen:\n{screen}"
        assert "1/3" in screen

        def screen_text() -> str:
            return "\n".join(s.text for s in app.screen._compositor.render_strips())

        await pilot.press("n")  # the reason box is on screen, not cut off below
        await pilot.pause(0.2)
        assert "Why?" in screen_text()
        await pilot.press("escape", "e")
        await pilot.pause(0.2)
        assert "ctrl+s Run" in screen_text() and "esc Back" in screen_text()
        assert '"path": "notes.txt"' in screen_text()
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert "y allow" in screen_text()
        await pilot.press("y")
        await ready(pilot, panel, "other.txt")
        assert panel.has_focus


async def test_a_long_queue_stays_bounded_and_answerable(proj: Path) -> None:
    # 30: more than 40 calls in one reply trips a separate bug in the tool panes.
    calls = [ToolCall(f"c{i}", "shout", {"path": f"f{i}.txt"}) for i in range(30)]
    provider = ScriptedProvider([[*calls, StreamEnd("tool_use")],
                                 [TextDelta("done"), StreamEnd("end_turn")]])
    app = app_for(proj, provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "many")
        panel = await wait_approval(pilot)
        await ready(pilot, panel, "f0.txt")
        assert "1/30" in panel_text(panel) and "30/30" in panel_text(panel)
        assert panel.region.height <= SIZE[1] * 0.6  # the list scrolls, it does not grow
        await pilot.press("N")
        await pilot.press("N")
        await wait_idle(pilot)
        assert ran(proj) == [] and len(tool_messages(app)) == 30


def test_500_calls_with_huge_and_hostile_arguments_list_in_bounded_lines() -> None:
    from tuiapp.ui.widgets.approval_queue import ARGS_SHOWN, ReplyCalls

    reply = ReplyCalls()
    reply.start([ToolCall(f"c{i}", "shout", {"path": "x" * 2_000_000 if i == 7 else
                                             f"a\tb\n\x1b[2J{i}"}) for i in range(500)])
    lines = reply.lines("c7").plain.split("\n")
    assert len(lines) == 500 and all(len(line) < ARGS_SHOWN + 80 for line in lines)
    assert "more characters" in lines[7] and "asking" in lines[7]
    assert "\x1b" not in reply.lines(None).plain  # escaped, never sent to the terminal


@pytest.mark.slow
async def test_a_key_pressed_too_soon_while_going_down_the_queue_is_dropped(
        proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """y y pressed quickly: the first answers call 1; the second comes before call 2 could
    be read, so it answers nothing and does not land in the message box either."""
    monkeypatch.setattr(approval_module, "GUARD_SECONDS", 5.0)
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, THREE)
        panel = await wait_approval(pilot)
        await pilot.press("y", "y")
        await until(pilot, lambda: current_path(panel) == "other.txt", what="call 2")
        await pilot.press("y")
        await pilot.pause(0.3)
        assert current_path(panel) == "other.txt" and panel.has_focus
        assert prompt(app).text == "" and ran(proj) == ["notes.txt"]
        assert "Key ignored" in panel_text(panel)
        await ready(pilot, panel, "other.txt")
        await pilot.press("y")
        await ready(pilot, panel, "third.txt")
        assert sorted(ran(proj)) == ["notes.txt", "other.txt"]


@pytest.mark.slow
async def test_focus_in_another_panel_moves_to_the_call_and_back(proj: Path) -> None:
    provider = GatedProvider()
    app = app_for(proj, provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await pilot.press("ctrl+f")
        await until(pilot, lambda: app.functions.display and not app.functions.has_class(
            "-hidden"), what="functions panel")
        focusable = [w for w in app.functions.query("*") if w.focusable]
        if focusable:
            focusable[0].focus()
        else:
            app.set_focus(None)
        await pilot.pause(0.1)
        assert not prompt(app).has_focus
        provider.gate.set()
        panel = await wait_approval(pilot)
        # Not left in the functions panel, where y does nothing. (A wait: the panel learns
        # it has the keyboard from an event, a moment after the screen gave it.)
        await until(pilot, lambda: panel.has_focus, what="the keyboard on the call")
        for path in ("notes.txt", "other.txt", "third.txt"):
            await ready(pilot, panel, path)
            await pilot.press("y")
        await wait_idle(pilot)
        assert sorted(ran(proj)) == ["notes.txt", "other.txt", "third.txt"]
        assert prompt(app).has_focus


async def test_the_always_button_asks_what_it_covers(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "shout notes.txt")
        panel = await wait_approval(pilot)
        await pilot.click("#approval .approval-always_allow")
        await pilot.pause(0.3)
        await pilot.click("#approval .approval-always_allow")
        await pilot.pause(0.3)
        assert (proj / "kep.toml").read_text() == KEP_TOML and ran(proj) == []
        assert "press the number" in panel_text(panel)
        await pilot.click("#approval .approval-choices Button")  # the narrowest: this file
        await wait_idle(pilot)
        assert ran(proj) == ["notes.txt"] and "^shout$" in (proj / "kep.toml").read_text()


async def test_Y_cannot_run_an_execcmd_the_user_never_saw(proj: Path) -> None:
    """Issue 12: a reply with a harmless call first and an `rm -rf` second; Y used to run both
    while only the first was on screen."""
    (proj / "kep.toml").write_text("")  # kep's built-ins on: execcmd asks
    (proj / "victim").mkdir()
    calls = [ToolCall("c1", "shout", {"path": "notes.txt"}),
             ToolCall("c2", "execcmd", {"cmd": "rm -rf victim"})]
    provider = ScriptedProvider([[*calls, StreamEnd("tool_use")],
                                 [TextDelta("done"), StreamEnd("end_turn")]])
    app = app_for(proj, provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "tidy up")
        panel = await wait_approval(pilot)
        assert current_path(panel) == "notes.txt"
        shown = panel_text(panel)
        assert "2/2 execcmd" in shown and "rm -rf victim" in shown  # seen before any answer
        await pilot.press("Y")
        await pilot.pause(0.3)
        assert "(shout, execcmd)" in panel_text(panel)  # what a second Y would cover
        assert (proj / "victim").is_dir() and ran(proj) == []
        await pilot.press("y")  # not Y: only the call on screen
        await until(pilot, lambda: panel.current is not None
                    and panel.current.call.name == "execcmd", what="the execcmd call")
        await pilot.pause(approval_module.GUARD_SECONDS + 0.15)
        await pilot.press("n", *"no", "enter")
        await wait_idle(pilot)
        assert (proj / "victim").is_dir() and ran(proj) == ["notes.txt"]
