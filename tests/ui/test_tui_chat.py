"""The chat in the real app: cancel a running tool, Esc mid-reply, prompt history, errors and
retry, the first-run panel, and resuming a saved session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
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

from tuiapp.conversation.store import Store
from tuiapp.providers.base import ProviderFailure, StreamEnd
from tuiapp.ui.widgets.first_run import FirstRunPanel
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.ui.widgets.reply import AssistantReply
from tuiapp.ui.widgets.status_footer import StatusFooter
from tuiapp.ui.widgets.transcript import ErrorBlock, Transcript, UserMessage
from tuiapp.vocab.events import TextDelta


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead too: it only waits for its parent to reap it.
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


async def test_cancel_key_stops_a_running_tool(proj: Path, unsandboxed: None) -> None:
    # (unsandboxed: the tool's pid is read from outside; inside the walls it is the sandbox's
    # own, and the PID namespace ends everything: tests/unit/test_sandbox_escape.py)
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "sleepy")
        await wait_approval(pilot)
        await pilot.press("y")
        pid_file = proj / "sleepy.pid"
        await until(pilot, lambda: pid_file.exists() and pid_file.read_text(), what="sleepy")
        pid = int(pid_file.read_text())
        assert app.query_one(StatusFooter).state == "tools"
        await pilot.press("ctrl+g")
        await wait_idle(pilot)
        (result,) = tool_messages(app)
        block = app.query_one(Transcript).block(result.tool_call_id or "")
        assert block is not None and block.status == "cancelled"
        assert "⊘" in str(block.query_one(".tool-icon").render())
        await until(pilot, lambda: not alive(pid), what="the tool process to be gone")


async def test_esc_interrupts_a_streaming_reply_and_keeps_the_partial_text(
        proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KEP_OFFLINE_DELAY", "0.05")  # the offline model's help text, slowly
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "hello there")
        await until(pilot, lambda: any(len(r.text.split()) >= 5 for r in app.query(AssistantReply)),
                    what="some streamed words")
        assert app.query_one(StatusFooter).state == "streaming"
        await pilot.press("escape")
        await wait_idle(pilot)
        (reply,) = app.query(AssistantReply)
        assert reply.interrupted
        assert reply.query(".interrupted-mark")
        last = app.chat.history[-1]
        assert last.role == "assistant" and last.interrupted
        assert last.content and last.content == reply.text
        assert "OPENAI_API_KEY" not in last.content  # the end of the help text never came
        # The conversation goes on after an interrupt.
        monkeypatch.setenv("KEP_OFFLINE_DELAY", "0")
        await send(pilot, "shout notes.txt")
        await wait_approval(pilot)


async def test_up_and_down_recall_earlier_prompts(proj: Path) -> None:
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        prompt = app.query_one(PromptInput)
        for text in ("one", "two"):
            await until(pilot, app.tools_ready.is_set)
            await pilot.press(*text, "enter")  # typed, as a person would
            await wait_idle(pilot)
        assert prompt.text == ""
        await pilot.press(*"dr")
        await pilot.press("up")
        assert prompt.text == "two"
        await pilot.press("up")
        assert prompt.text == "one"
        await pilot.press("up")  # nothing older: stays
        assert prompt.text == "one"
        await pilot.press("down")
        assert prompt.text == "two"
        await pilot.press("down")
        assert prompt.text == "dr"  # what was being typed comes back
        # Ctrl+J adds a line; Up then moves within the text instead of recalling.
        await pilot.press("ctrl+j", "x")
        assert prompt.text == "dr\nx"
        await pilot.press("up")
        assert prompt.text == "dr\nx"


async def test_provider_error_is_shown_and_ctrl_r_retries(proj: Path) -> None:
    provider = ScriptedProvider([
        [ProviderFailure("server said 500: try later")],
        [TextDelta("It worked "), TextDelta("this time."), StreamEnd("end_turn")],
    ])
    app = app_for(proj, provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "hi")
        await wait_idle(pilot)
        (error,) = app.query(ErrorBlock)
        assert "server said 500" in error.message
        assert app.query_one(StatusFooter).state == "error"
        await pilot.press("ctrl+r")
        await wait_idle(pilot)
        assert "It worked this time." in [r.text for r in app.query(AssistantReply)]
        assert len(provider.requests) == 2
        assert [m.role for m in provider.requests[1]] == ["user"]  # the same request again


async def test_first_run_panel_says_what_is_active_and_how_to_configure(proj: Path) -> None:
    app = app_for(proj, first_run=True)
    async with app.run_test(size=SIZE) as pilot:
        panel = app.query_one(FirstRunPanel)
        await until(pilot, lambda: "shout" in str(panel.query_one(".first-run-tools").render()),
                    what="the tools list")
        text = " ".join(str(w.render()) for w in panel.query("Static"))
        assert "offline" in text
        assert "sleepy" in text and "Tools found (2)" in text
        setup = str(panel.query_one(".first-run-setup").render())
        for hint in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "--model", "[providers.NAME]"):
            assert hint in setup
        assert app.query_one(PromptInput).has_focus  # typing works straight away
        await pilot.press("escape")
        await until(pilot, lambda: not app.query(FirstRunPanel), what="dismissal")


@pytest.mark.slow
async def test_a_saved_session_opens_with_its_history(proj: Path) -> None:
    store = Store.open()
    first = app_for(proj, store=store)
    async with first.run_test(size=SIZE) as pilot:
        await send(pilot, "shout notes.txt")
        await wait_approval(pilot)
        await pilot.press("y")
        await wait_idle(pilot)
        session_id = first.chat.session_id
    assert session_id is not None and store.latest_session(proj) == session_id

    again = app_for(proj, store=store, session_id=session_id,
                    history=store.load_messages(session_id))
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        transcript = again.query_one(Transcript)
        assert [str(u.render()) for u in transcript.query(UserMessage)] == ["shout notes.txt"]
        (block,) = transcript.query(".tool-block")
        assert block.status == "ok"  # type: ignore[attr-defined]
        assert "exit 0" in str(block.query_one(".tool-meta").render())
        assert "finished ok" in transcript.query(AssistantReply).last().text
        # New messages go on in the same session.
        await send(pilot, "shout other.txt")
        await wait_approval(pilot)
        await pilot.press("y")
        await wait_idle(pilot)
    roles = [m.role for m in store.load_messages(session_id)]
    assert roles == ["user", "assistant", "tool", "assistant"] * 2
    store.close()
