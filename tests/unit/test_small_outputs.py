"""Issue 29's small wrong outputs that were still wrong: each as a user would notice it."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from tuiapp.commands import run
from tuiapp.security.policy import Verdict
from tuiapp.vocab.events import ToolFinished
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

SPEC = ToolSpec("slow", "", {"type": "object"}, "keprompt", "/x/slow")


def test_a_call_finishing_during_a_question_never_lands_on_its_line(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`kep run` on a TTY: another call finishes while kep asks about this one."""
    err = io.StringIO()
    printer = run.Printer(False, out=io.StringIO(), err=err)

    def answer(prompt: str) -> str:
        err.write(prompt)  # as the terminal shows it
        for i in range(3):  # several calls finish while the user thinks
            printer(ToolFinished(f"c{i}", "other", "ok", 0, 5, "done"))
        err.write("y\n")  # the terminal's echo of the answer
        return "y"

    monkeypatch.setattr(run, "_read_answer", answer)
    ask = run.tty_approver(printer)
    approval = asyncio.run(ask(ToolCall("c9", "slow", {"n": 1}), SPEC, Verdict("ask", "default")))
    assert approval.approved
    lines = err.getvalue().splitlines()
    status = [line for line in lines if "other ok" in line]
    assert len(status) == 3 and all(line.startswith("✔ other ok") for line in status), lines
    assert lines[-1].startswith("Allow slow")  # the question is asked again, last
    assert lines[-1].endswith("[y/N] y")
    printer(ToolFinished("c8", "other", "ok", 0, 5, "done"))  # after the answer: as before
    assert err.getvalue().endswith("\n✔ other ok (exit 0, 5 ms)\n")


def _reply_text(messages: list[object]) -> str:
    from tuiapp.vocab.events import TextDelta

    return "".join(e.text for e in messages if isinstance(e, TextDelta))


async def test_the_offline_model_says_why_a_named_tool_is_unavailable(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tuiapp.project import config as project_config
    from tuiapp.project.workspace import Workspace
    from tuiapp.providers.offline import OfflineProvider
    from tuiapp.security import trust
    from tuiapp.settings.config_types import BUILTIN_PROVIDERS
    from tuiapp.vocab.messages import Message

    folder = project / "prompts" / "functions"
    folder.mkdir(parents=True, exist_ok=True)
    broken = folder / "mangle.py"
    broken.write_text("#!/usr/bin/env python3\ndef broken(:\n")
    broken.chmod(0o755)
    ws = Workspace(project_config.load(project))
    await ws.registry.refresh()
    provider = OfflineProvider(BUILTIN_PROVIDERS["offline"], "")

    async def reply(text: str) -> str:
        return _reply_text([e async for e in provider.stream([Message("user", text)], [], None)])

    said = await reply("mangle some text")
    assert "`mangle` is not available: it is broken" in said.splitlines()[0], said
    said = await reply("/call mangle {}")
    assert "is not available: it is broken" in said
    assert "not available" not in await reply("nosuchtool x")  # unknown: just the help

    (folder / "stamp").write_text("#!/bin/sh\necho hi\n")
    monkeypatch.setattr(trust, "state_of", lambda config: type("S", (), {"trusted": False})())
    said = await reply("stamp now")
    assert "`stamp` is not available: this project's folder is not trusted" in said, said
