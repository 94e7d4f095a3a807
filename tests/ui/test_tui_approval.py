"""Keyboard approval in the real app, on the offline model: y / n / a / d / e / Y / N."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from textual.widgets import Input, TextArea
from tui_helpers import (
    SIZE,
    ScriptedProvider,
    app_for,
    approval,
    make_project,
    send,
    tool_messages,
    until,
    wait_approval,
    wait_idle,
)

from tuiapp.providers.base import StreamEnd
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.ui.widgets.reply import AssistantReply
from tuiapp.ui.widgets.transcript import Transcript
from tuiapp.vocab.events import TextDelta
from tuiapp.vocab.messages import ToolCall


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


def ran(proj: Path) -> list[str]:
    marker = proj / "shout.ran"
    return marker.read_text().split() if marker.exists() else []


def replies(app: object) -> str:
    return "\n".join(r.text for r in app.query(AssistantReply))  # type: ignore[attr-defined]


async def test_y_allows_once_and_the_tool_runs_only_then(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "shout notes.txt")
        panel = await wait_approval(pilot)
        assert panel.has_focus
        assert ran(proj) == []  # asked, not run
        block = app.query_one(Transcript).block(panel.current.call.id)
        assert block is not None and block.status == "asking"
        await pilot.press("y")
        await wait_idle(pilot)
        assert ran(proj) == ["notes.txt"]
        assert block.status == "ok"
        assert "HELLO FROM NOTES" in tool_messages(app)[0].content
        assert "finished ok" in replies(app)
        assert not panel.display
        assert app.query_one(PromptInput).has_focus  # focus back to the prompt
        # Once means once: the same call asks again.
        await send(pilot, "shout notes.txt")
        await wait_approval(pilot)
        await pilot.press("y")
        await wait_idle(pilot)


async def test_n_with_a_reason_reaches_the_model(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "shout notes.txt")
        await wait_approval(pilot)
        await pilot.press("n")
        reason = approval(app).query_one(Input)
        assert reason.has_focus
        await pilot.press(*"not that file", "enter")
        await wait_idle(pilot)
        assert ran(proj) == []
        (result,) = tool_messages(app)
        assert result.is_error and "not that file" in result.content
        block = app.query_one(Transcript).block(result.tool_call_id or "")
        assert block is not None and block.status == "denied"


async def test_a_writes_an_allow_rule_to_kep_toml(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "shout notes.txt")
        panel = await wait_approval(pilot)
        await pilot.press("a")
        whole = next(i for i, o in enumerate(panel.choices(), 1) if o.args is None)
        await pilot.press(str(whole))  # a digit says what it covers: the whole tool
        await wait_idle(pilot)
        assert ran(proj) == ["notes.txt"]
        data = tomllib.loads((proj / "kep.toml").read_text())
        rule = data["approval"]["rules"][0]
        assert (rule["tool"], rule["action"], "args" in rule) == ("^shout$", "allow", False)
        assert rule["comment"].startswith("added by kep on ") and "notes.txt" in rule["comment"]
        assert data["tools"] == {"builtins": False}  # the rest of the file is kept
        assert any("rule added" in n.message for n in app._notifications)
        # The rule applies at once: the next call runs without asking.
        await send(pilot, "shout other.txt")
        await wait_idle(pilot)
        assert ran(proj) == ["notes.txt", "other.txt"]
        assert not approval(app).display


async def test_d_writes_a_deny_rule_and_later_calls_are_denied_without_asking(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "shout notes.txt")
        panel = await wait_approval(pilot)
        await pilot.press("d")
        whole = next(i for i, o in enumerate(panel.choices(), 1) if o.args is None)
        await pilot.press(str(whole))
        await wait_idle(pilot)
        data = tomllib.loads((proj / "kep.toml").read_text())
        rule = data["approval"]["rules"][0]
        assert (rule["tool"], rule["action"], "args" in rule) == ("^shout$", "deny", False)
        await send(pilot, "shout other.txt")
        await wait_idle(pilot)
        assert ran(proj) == []
        assert all(m.is_error for m in tool_messages(app))
        assert "denied by policy" in tool_messages(app)[-1].content


@pytest.mark.slow
async def test_a_narrow_always_covers_only_the_file_shown(proj: Path) -> None:
    """Issue 25 item 2: the first choice is the narrowest (this file); a call on another
    file is asked again; the written rule is anchored and says where it came from."""
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "shout notes.txt")
        panel = await wait_approval(pilot)
        await pilot.press("a")
        assert "shout on the file notes.txt" in panel.choices()[0].label
        await pilot.press("1")
        await wait_idle(pilot)
        rule = tomllib.loads((proj / "kep.toml").read_text())["approval"]["rules"][0]
        assert rule["args"].startswith("^") and rule["args"].endswith("$")
        await send(pilot, "shout notes.txt")
        await wait_idle(pilot)
        assert ran(proj) == ["notes.txt", "notes.txt"]  # the same file: not asked
        await send(pilot, "shout other.txt")
        await wait_approval(pilot)  # another file: asked
        assert ran(proj) == ["notes.txt", "notes.txt"]


@pytest.mark.slow
async def test_e_edits_the_arguments_and_invalid_json_is_refused(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "shout notes.txt")
        panel = await wait_approval(pilot)
        await pilot.press("e")
        editor = panel.query_one(TextArea)
        assert editor.has_focus and '"notes.txt"' in editor.text
        editor.load_text('{"path": "other.txt"')  # broken JSON
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "not valid JSON" in str(panel.query_one(".approval-error").render())
        assert panel.current is not None and ran(proj) == []
        editor.load_text('{"path": 42}')  # JSON, but not what the schema says
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "schema" in str(panel.query_one(".approval-error").render())
        assert ran(proj) == []
        editor.load_text('{"path": "other.txt"}')
        await pilot.press("ctrl+s")
        # The edited call is decided again: it still needs asking, so kep asks about it.
        await until(pilot, lambda: panel.current is not None
                    and panel.current.call.arguments == {"path": "other.txt"},
                    what="the question about the edited call")
        assert ran(proj) == []
        assert "edited" in str(panel.query_one(".approval-rule").render())
        await pilot.pause(0.6)  # a fresh question ignores keys for a moment
        panel.focus()
        await pilot.press("y")
        await wait_idle(pilot)
        assert ran(proj) == ["other.txt"]
        assert "OTHER FILE" in tool_messages(app)[0].content


def two_calls() -> ScriptedProvider:
    calls = [ToolCall("c1", "shout", {"path": "notes.txt"}),
             ToolCall("c2", "shout", {"path": "other.txt"})]
    return ScriptedProvider([[*calls, StreamEnd("tool_use")],
                             [TextDelta("both done"), StreamEnd("end_turn")]])


@pytest.mark.slow
async def test_Y_allows_every_pending_call_of_the_reply(proj: Path) -> None:
    provider = two_calls()
    app = app_for(proj, provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "shout both")
        await wait_approval(pilot)
        await pilot.press("Y", "Y")  # a second key confirms
        await wait_idle(pilot)
        assert sorted(ran(proj)) == ["notes.txt", "other.txt"]
        assert [m.is_error for m in tool_messages(app)] == [False, False]
        assert "both done" in replies(app)


async def test_N_denies_every_pending_call_of_the_reply(proj: Path) -> None:
    app = app_for(proj, provider=two_calls())
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "shout both")
        await wait_approval(pilot)
        await pilot.press("N", "N")  # a second key confirms
        await wait_idle(pilot)
        assert ran(proj) == []
        assert [m.is_error for m in tool_messages(app)] == [True, True]


@pytest.mark.slow
async def test_every_key_has_a_button(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "shout notes.txt")
        panel = await wait_approval(pilot)
        names = {b.name for b in panel.query("Button")}
        assert {"allow", "deny", "always_allow", "always_deny", "edit", "allow_all",
                "deny_all"} <= names
        await pilot.click("#approval .approval-allow")
        await wait_idle(pilot)
        assert ran(proj) == ["notes.txt"]
        await until(pilot, lambda: app.query_one(PromptInput).has_focus, what="focus")
