"""A `!` line: runs as typed through kep's execcmd and the rules, in the sandbox; the output
in a tool pane, then an offer to add it to the next message. Denied lines run nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Button
from tui_helpers import SIZE, ScriptedProvider, app_for, send, until

from tuiapp.ui.slash.shell import ShellResult, attachment
from tuiapp.ui.widgets.prompt_input import PromptInput

DENY = '[[approval.rules]]\ntool = "^execcmd$"\nargs = "rm "\naction = "deny"\n'


def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "prompts" / "functions").mkdir(parents=True)
    (root / "kep.toml").write_text(DENY)  # kep's built-ins on (execcmd)
    (root / "victim.txt").write_text("keep me\n")
    return root


@pytest.mark.parametrize("size", [SIZE, (80, 24)])
async def test_a_shell_line_runs_shows_its_output_and_offers_it(
        tmp_path: Path, size: tuple[int, int]) -> None:
    provider = ScriptedProvider([])
    app = app_for(project(tmp_path), provider=provider)
    async with app.run_test(size=size) as pilot:
        await send(pilot, "!printf 'before\\033]2;pwned\\007after\\n'; echo second")
        await until(pilot, lambda: app.query(f"{ShellResult.__name__} .shell-status"), timeout=30,
                    what="the result")  # its lines, not just the block: they mount after it
        pane = app.panes.newest()
        assert pane is not None
        shown = "\n".join(pane.output.lines())
        assert "second" in shown and "\x1b" not in shown and "\x07" not in shown
        block = app.query_one(ShellResult)
        assert "exit 0" in str(block.query_one(".shell-status").render())
        preview = str(block.query_one(".shell-output").render())  # seen without the panes
        assert "second" in preview and "\x1b" not in preview and "\x07" not in preview
        block.query_one("#shell-attach", Button).press()
        prompt = app.query_one(PromptInput)
        await until(pilot, lambda: "second" in prompt.text, what="the output in the prompt")
        assert "\x1b" not in prompt.text and "\x07" not in prompt.text
        assert prompt.text.startswith("```\n$ printf")
    assert provider.requests == []  # nothing was sent until the user sends it


async def test_a_shell_line_a_rule_denies_runs_nothing(tmp_path: Path) -> None:
    root = project(tmp_path)
    app = app_for(root, provider=ScriptedProvider([]))
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "!rm victim.txt")
        await until(pilot, lambda: app._notifications, what="a notice")
        (note,) = [n.message for n in app._notifications]
        assert "denied by" in note and "Nothing was run" in note
        await pilot.pause(0.3)
        assert not app.query(ShellResult)
    assert (root / "victim.txt").read_text() == "keep me\n"


async def test_a_bare_bang_is_one_line(tmp_path: Path) -> None:
    provider = ScriptedProvider([[]])
    app = app_for(project(tmp_path), provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "!")
        await until(pilot, lambda: app._notifications, what="a notice")
        assert "Type a command after !" in next(iter(app._notifications)).message


def test_the_attachment_is_fenced_bounded_and_clean() -> None:
    text = attachment("cat x", "a ``` fence\x1b[31m red\n" + "y" * 100_000)
    assert text.startswith("````\n$ cat x\n") and text.rstrip().endswith("````")
    assert "\x1b" not in text and len(text) < 70_000 and "more characters" in text


async def test_two_shell_lines_one_after_the_other(tmp_path: Path) -> None:
    app = app_for(project(tmp_path), provider=ScriptedProvider([]))
    async with app.run_test(size=(80, 24)) as pilot:
        await send(pilot, "!echo one")
        await until(pilot, lambda: len(app.query(".shell-status")) == 1, timeout=30, what="one")
        await send(pilot, "!echo two; exit 3")
        await until(pilot, lambda: len(app.query(".shell-status")) == 2, timeout=30, what="two")
        last = app.query(ShellResult).last()
        assert "exit 3" in str(last.query_one(".shell-status").render())
        assert "two" in str(last.query_one(".shell-output").render())
