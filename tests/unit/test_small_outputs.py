"""Issue 29's small wrong outputs that were still wrong: each as a user would notice it."""

from __future__ import annotations

import asyncio
import io

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
