"""The network question in the TUI: a sandboxed tool connects, through kep's proxy, to a
loopback server no rule or profile allows; the approval panel asks while the proxy holds the
connection (y once, n refuse, s session, a always: a profile entry in kep.toml), several
questions queue, the message box keeps the keyboard while the user types there, and no answer
within the time limit refuses the connection without freezing the screen."""

from __future__ import annotations

import http.server
import os
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import write_tool
from textual.widgets import Input
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
from tuiapp.security.sandbox import netask, spawn
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.vocab.events import TextDelta
from tuiapp.vocab.messages import ToolCall

pytestmark = pytest.mark.skipif(
    spawn.mechanism().missing() is not None and os.environ.get("KEP_TEST_REQUIRE_SANDBOX") != "1",
    reason=f"no sandbox here: {spawn.mechanism().missing()}")

# Fetches every URL it is given at once (threads), and prints what each one got.
FETCH = r'''#!/usr/bin/env python3
import json, sys, threading, urllib.request
if sys.argv[1:] == ["--list-functions"]:
    print(json.dumps([{"name": "fetch", "description": "Fetch URLs",
        "parameters": {"type": "object", "properties": {"urls": {"type": "array",
                       "items": {"type": "string"}}}, "required": ["urls"]}}]))
    sys.exit(0)
urls = json.load(sys.stdin)["urls"]
got = {}
def one(i, u):
    try:
        got[i] = urllib.request.urlopen(u, timeout=60).read().decode().strip()
    except Exception as e:
        got[i] = "refused: " + str(e)
ts = [threading.Thread(target=one, args=(i, u)) for i, u in enumerate(urls)]
[t.start() for t in ts]
[t.join() for t in ts]
print("\n".join(got[i] for i in range(len(urls))))
'''


@pytest.fixture
def webs() -> Iterator[list[int]]:
    """Three loopback web servers, each answering with its own port."""
    servers = []
    for _ in range(3):
        class Quiet(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = f"hello from {self.server.server_address[1]}\n".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a: object) -> None:
                pass

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
    yield [s.server_address[1] for s in servers]
    for s in servers:
        s.shutdown()


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "proj")
    write_tool(root / "prompts" / "functions" / "fetch", FETCH)
    # The call itself is allowed by a rule: what is asked is the network only.
    (root / "kep.toml").write_text(
        "# my project\n[tools]\nbuiltins = false\n\n[[approval.rules]]\ntool = \"^fetch$\"\n"
        "action = \"allow\"\n\n[sandbox]\nnetwork = \"ask\"  # ask about every host\n")
    return root


def fetching(port: int, turns: int = 1) -> ScriptedProvider:
    urls = [f"http://127.0.0.1:{port}/"]
    steps: list[list[object]] = []
    for n in range(turns):
        steps += [[ToolCall(f"c{n}", "fetch", {"urls": urls}), StreamEnd("tool_use")],
                  [TextDelta("fetched"), StreamEnd("end_turn")]]
    return ScriptedProvider(steps)  # type: ignore[arg-type]


def result(app: object) -> str:
    return tool_messages(app)[-1].content  # type: ignore[arg-type]


async def answer(pilot: object, panel: object, *keys: str) -> None:
    """Press `keys` on the question on screen until it is answered (under load a key can
    land inside the guard time of a question just redrawn, and is then ignored)."""
    req = panel.current  # type: ignore[attr-defined]
    assert req is not None
    for _ in range(5):
        await wait_approval(pilot)  # type: ignore[arg-type]
        await pilot.pause(0.1)  # type: ignore[attr-defined]  (its redraw has happened)
        await wait_approval(pilot)  # type: ignore[arg-type]
        await pilot.press(*keys)  # type: ignore[attr-defined]
        if keys == ("n",):
            reason: Input = panel.query_one(Input)  # type: ignore[attr-defined]
            try:
                await until(pilot, lambda r=reason: r.has_focus, timeout=3)  # type: ignore[arg-type]
            except AssertionError:
                continue
            await pilot.press("enter")  # type: ignore[attr-defined]
        try:
            await until(pilot, req.future.done, timeout=3)  # type: ignore[arg-type]
            return
        except AssertionError:  # the key went to the message box: take it back, again
            pilot.app.query_one(PromptInput).load_text("")  # type: ignore[attr-defined]
            panel.focus()  # type: ignore[attr-defined]
    raise AssertionError("the question was never answered")


async def test_y_allows_this_connection_and_the_next_call_asks_again(proj: Path,
                                                                   webs: list[int]) -> None:
    port = webs[0]
    app = app_for(proj, provider=fetching(port, 2))
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "fetch")
        panel = await wait_approval(pilot)
        req = panel.current
        assert req is not None and req.spec.format == netask.FORMAT
        assert req.call.name == "fetch" and req.call.arguments == {"reach": f"127.0.0.1:{port}"}
        assert "reach 127.0.0.1" in str(panel.query_one(".approval-title").render())
        await answer(pilot, panel, "y")
        await wait_idle(pilot)
        assert result(app) == f"hello from {port}"
        assert not panel.display and app.query_one(PromptInput).has_focus
        # once means once: the next call asks again
        await send(pilot, "fetch again")
        await wait_approval(pilot)
        await answer(pilot, panel, "n")  # (no reason)
        await wait_idle(pilot)
        assert "hello" not in result(app) and "403" in result(app)


async def test_s_allows_the_host_for_the_session(proj: Path, webs: list[int]) -> None:
    port = webs[0]
    before = (proj / "kep.toml").read_text()
    app = app_for(proj, provider=fetching(port, 2))
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "fetch")
        panel = await wait_approval(pilot)
        labels = [c.label for c in panel.choices("session")]
        assert labels[0] == f"127.0.0.1:{port} for fetch"
        await answer(pilot, panel, "s", "1")
        await wait_idle(pilot)
        assert result(app) == f"hello from {port}"
        await send(pilot, "fetch again")
        await wait_idle(pilot)  # not asked again
        assert result(app) == f"hello from {port}"
        assert (proj / "kep.toml").read_text() == before  # the session only: nothing written


async def test_a_writes_a_profile_entry_and_keeps_the_file(proj: Path, webs: list[int]) -> None:
    port = webs[0]
    app = app_for(proj, provider=fetching(port))
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "fetch")
        panel = await wait_approval(pilot)
        await answer(pilot, panel, "a", "1")
        await wait_idle(pilot)
        assert result(app) == f"hello from {port}"
        text = (proj / "kep.toml").read_text()
        data = tomllib.loads(text)
        assert data["sandbox"]["tools"]["fetch"]["network"] == [f"127.0.0.1:{port}"]
        assert data["sandbox"]["network"] == "ask" and "# my project" in text
        assert "# ask about every host" in text  # comments kept (tomlkit)
        # the entry is in force (trusted as the user's own answer), not held back
        assert app.ws.config.sandbox.tools["fetch"].network == (f"127.0.0.1:{port}",)


async def test_several_questions_queue_and_each_gets_its_answer(proj: Path,
                                                                webs: list[int]) -> None:
    a, b, c = webs
    # three hosts at once, and the first one three times: one question per host
    app = app_for(proj, provider=ScriptedProvider([
        [ToolCall("c1", "fetch", {"urls": [f"http://127.0.0.1:{p}/" for p in (a, a, b, a, c)]}),
         StreamEnd("tool_use")], [TextDelta("fetched"), StreamEnd("end_turn")]]))
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "fetch")
        panel = await wait_approval(pilot)
        await until(pilot, lambda: len(panel.queue) == 3, what="three questions")
        asked = {}
        for _ in range(3):
            panel = await wait_approval(pilot)
            assert panel.current is not None
            where = panel.current.call.arguments["reach"]
            asked[where] = "n" if where.endswith(f":{b}") else "y"
            await answer(pilot, panel, asked[where])
        assert sorted(asked) == sorted(f"127.0.0.1:{p}" for p in (a, b, c))
        await wait_idle(pilot)
        lines = result(app).splitlines()
        assert lines[0] == lines[1] == lines[3] == f"hello from {a}"
        assert lines[2].startswith("refused") and lines[4] == f"hello from {c}"


async def test_typing_in_the_message_box_keeps_the_keyboard(proj: Path, webs: list[int]) -> None:
    port = webs[0]
    app = app_for(proj, provider=fetching(port))
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "fetch")
        prompt = app.query_one(PromptInput)
        prompt.focus()
        await pilot.press(*"yes and")  # typing while the question arrives
        panel = await wait_approval(pilot, armed=False)
        await pilot.press(*" so")
        assert prompt.has_focus and prompt.text == "yes and so"  # no key answered it
        assert panel.current is not None and panel.current.open
        await pilot.press("escape")  # Esc in the message box goes to the panel
        await until(pilot, lambda: panel.has_focus and panel.armed, what="panel")
        await answer(pilot, panel, "y")
        await wait_idle(pilot)
        assert result(app) == f"hello from {port}" and prompt.text == "yes and so"


async def test_no_answer_refuses_in_time_and_the_screen_stays_live(
        proj: Path, webs: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netask, "ASK_SECONDS", 1.0)
    port = webs[0]
    app = app_for(proj, provider=fetching(port))
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "fetch")
        panel = await wait_approval(pilot)
        prompt = app.query_one(PromptInput)
        prompt.focus()
        await pilot.press(*"still typing")  # the screen answers while the proxy waits
        assert prompt.text == "still typing"
        await wait_idle(pilot)
        assert result(app).startswith("refused") and "403" in result(app)
        await until(pilot, lambda: not panel.display, what="the question to go")
