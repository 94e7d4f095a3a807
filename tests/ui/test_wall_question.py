"""Widening a wall from the approval panel: a sandboxed tool fails writing outside the
project; the panel offers to make that path writable for this call (it runs again), for the
session, or always (a `[sandbox.tools.NAME] writable` entry in kep.toml); n leaves the
failure. Hidden paths and the project's own read-only parts are never offered."""

from __future__ import annotations

import os
import shutil
import tempfile
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
from tuiapp.security.sandbox import spawn, walls
from tuiapp.ui.widgets.prompt_input import PromptInput
from tuiapp.vocab.events import TextDelta
from tuiapp.vocab.messages import ToolCall

pytestmark = pytest.mark.skipif(
    spawn.mechanism().missing() is not None and os.environ.get("KEP_TEST_REQUIRE_SANDBOX") != "1",
    reason=f"no sandbox here: {spawn.mechanism().missing()}")

SCRIBBLE = r'''#!/usr/bin/env python3
import json, sys
if sys.argv[1:] == ["--list-functions"]:
    print(json.dumps([{"name": "scribble", "description": "Write a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                       "required": ["path"]}}]))
    sys.exit(0)
path = json.load(sys.stdin)["path"]
with open(path, "w") as f:
    f.write("scribbled\n")
print("wrote " + path)
'''


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the project and outside /tmp (the sandbox's /tmp is its own)."""
    base = Path("/var/tmp") if os.access("/var/tmp", os.W_OK) else Path.cwd()
    d = Path(tempfile.mkdtemp(prefix="kep-wall-test-", dir=base))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(autouse=True)
def fresh_session() -> Iterator[None]:
    walls._session.clear()
    yield
    walls._session.clear()


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "proj")
    write_tool(root / "prompts" / "functions" / "scribble", SCRIBBLE)
    (root / "kep.toml").write_text(
        "# mine\n[tools]\nbuiltins = false\n\n[[approval.rules]]\ntool = \"^scribble$\"\n"
        "action = \"allow\"\n")
    return root


def scribbling(*paths: Path) -> ScriptedProvider:
    steps: list[list[object]] = []
    for n, p in enumerate(paths):
        steps += [[ToolCall(f"c{n}", "scribble", {"path": str(p)}), StreamEnd("tool_use")],
                  [TextDelta("done"), StreamEnd("end_turn")]]
    return ScriptedProvider(steps)  # type: ignore[arg-type]


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


async def test_y_runs_the_call_again_with_the_path_writable(proj: Path, outside: Path) -> None:
    target = outside / "note.txt"
    app = app_for(proj, provider=scribbling(target, outside / "second.txt"))
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "scribble")
        panel = await wait_approval(pilot)
        req = panel.current
        assert req is not None and req.spec.format == walls.FORMAT
        assert req.call.arguments == {"writable": str(outside)}  # the file is not there yet
        assert not target.exists()  # the first run was refused by the wall
        await answer(pilot, panel, "y")
        await wait_idle(pilot)
        assert target.read_text() == "scribbled\n"
        assert tool_messages(app)[-1].content == f"wrote {target}"
        # this call only: the next one meets the wall again (and n leaves it failed)
        await send(pilot, "again")
        panel = await wait_approval(pilot)
        await answer(pilot, panel, "n")
        await wait_idle(pilot)
        assert not (outside / "second.txt").exists()
        assert "Read-only file system" in tool_messages(app)[-1].content


async def test_s_widens_for_the_session_and_a_writes_kep_toml(proj: Path, outside: Path) -> None:
    app = app_for(proj, provider=scribbling(outside / "a.txt", outside / "b.txt"))
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "scribble")
        panel = await wait_approval(pilot)
        assert next(c.args for c in panel.choices("always_allow")) == str(outside)
        await answer(pilot, panel, "a", "1")
        await wait_idle(pilot)
        assert (outside / "a.txt").exists()
        data = tomllib.loads((proj / "kep.toml").read_text())
        assert data["sandbox"]["tools"]["scribble"]["writable"] == [str(outside)]
        assert "# mine" in (proj / "kep.toml").read_text()
        assert app.ws.config.sandbox.tools["scribble"].writable == (str(outside),)
        await send(pilot, "again")  # not asked: the wall is wider now
        await wait_idle(pilot)
        assert (outside / "b.txt").exists()


async def test_hidden_and_project_walls_are_never_offered(proj: Path, outside: Path) -> None:
    with (proj / "kep.toml").open("a") as f:  # a hidden folder outside the project
        f.write(f'\n[sandbox]\nhidden = ["{outside}"]\n')
    (proj / ".git" / "hooks").mkdir(parents=True)
    app = app_for(proj, provider=scribbling(outside / "key.pem",
                                            proj / ".git" / "hooks" / "pre-commit"))
    async with app.run_test(size=SIZE) as pilot:
        for text in ("one", "two"):
            await send(pilot, text)
            await wait_idle(pilot)
            assert "Read-only file system" in tool_messages(app)[-1].content
        assert not app.approval.display
    assert not (proj / ".git" / "hooks" / "pre-commit").exists()
    assert not (outside / "key.pem").exists()
