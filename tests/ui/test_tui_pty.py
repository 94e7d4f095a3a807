"""The real `kep` binary in a pseudo-terminal, driven as a person would: type a request naming
a project tool, see the approval (and that nothing ran), press y, see the tool's output in the
side pane and the summary in the transcript. The screen is read back with pyte."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pexpect
import pyte
import pytest
from conftest import kep_env
from tui_helpers import make_project

ROWS, COLS = 40, 120
# A real kep in a terminal: these share one parallel worker (conftest.py), never two at once.
pytestmark = pytest.mark.xdist_group("pty")


class Terminal:
    """A pty running kep, with a virtual screen fed from its output."""

    def __init__(self, argv: list[str], cwd: Path, **env: str) -> None:
        self.screen = pyte.Screen(COLS, ROWS)
        self.stream = pyte.ByteStream(self.screen)
        self.child = pexpect.spawn(argv[0], argv[1:], cwd=str(cwd), dimensions=(ROWS, COLS),
                                   env=kep_env(TERM="xterm-256color", COLUMNS=str(COLS),
                                               LINES=str(ROWS), **env))

    def pump(self, seconds: float = 0.05) -> None:
        try:
            data = self.child.read_nonblocking(1 << 16, timeout=seconds)
        except pexpect.TIMEOUT:
            return
        except pexpect.EOF:
            raise AssertionError("kep exited:\n" + self.text()) from None
        self.stream.feed(data)

    def text(self) -> str:
        return "\n".join(self.screen.display)

    def wait(self, check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; screen:\n{self.text()}")
            self.pump()

    def wait_text(self, needle: str, timeout: float = 30.0) -> None:
        self.wait(lambda: needle in self.text(), repr(needle), timeout)

    def type(self, text: str) -> None:
        for ch in text:  # one key at a time, like a person
            self.child.send(ch)
            self.pump(0.01)

    def idle(self, seconds: float) -> None:
        """Keep reading the screen for `seconds` (a person looking before pressing a key)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.pump(0.05)

    def close(self) -> int | None:
        if self.child.isalive():
            self.child.terminate(force=True)
        return self.child.exitstatus


def kep_argv() -> list[str]:
    exe = Path(sys.executable).with_name("kep")
    return [str(exe)] if exe.exists() else [shutil.which("kep") or "kep"]


@pytest.mark.slow
def test_a_person_runs_a_project_tool_through_the_tui(tmp_path: Path) -> None:
    proj = make_project(tmp_path / "proj")
    term = Terminal([*kep_argv(), "--model", "offline", "--project", str(proj)], proj)
    try:
        term.wait_text("Message kep")  # the prompt is on screen
        term.type("shout notes.txt")
        term.child.send("\r")
        # (a frame can arrive in several reads: wait for the whole block, then look at it)
        term.wait(lambda: all(t in term.text() for t in
                              ("Run shout?", '"path": "notes.txt"', "asking because")),
                  "the whole approval block")
        assert not (proj / "shout.ran").exists()  # asked, not run

        term.idle(1.0)  # keys in an approval's first half second go to the message box
        term.type("y")
        term.wait_text("finished ok")
        chat_width = int(COLS * 0.6)

        def in_pane() -> bool:
            return any("HELLO FROM NOTES" in line[chat_width:] for line in term.screen.display)

        term.wait(in_pane, "the tool's output in the side pane")
        assert (proj / "shout.ran").read_text() == "notes.txt\n"
        term.wait_text("exit 0")  # the tool block in the transcript

        term.child.send("\x11")  # ctrl+q
        term.child.expect(pexpect.EOF, timeout=15)
        term.child.close()
        assert term.child.exitstatus == 0
    finally:
        term.close()


@pytest.mark.slow
def test_the_readme_start_command_greets_once_per_project(tmp_path: Path) -> None:
    """`kep --model offline` (the README's first command) lands on the welcome panel; once it
    is dismissed it stays away in that project, and comes back from the palette."""
    proj = make_project(tmp_path / "proj")
    argv = [*kep_argv(), "--model", "offline", "--project", str(proj)]
    term = Terminal(argv, proj)
    try:
        term.wait_text("Welcome to kep")
        term.wait_text("Got it")
        term.child.send("\x1b")  # Esc puts it away for good
        term.wait(lambda: "Welcome to kep" not in term.text(), "the panel to go")
        term.child.send("\x11")  # ctrl+q
        term.child.expect(pexpect.EOF, timeout=15)
    finally:
        term.close()
    term = Terminal(argv, proj)
    try:
        term.wait_text("Message kep")
        time.sleep(1.0)
        term.pump(0.3)
        assert "Welcome to kep" not in term.text()
        term.child.send("\x10")  # ctrl+p: the palette still has it
        term.wait_text("Search for commands")
        term.type("Show welcome")
        term.wait_text("The first-run panel")  # the palette found it
        term.child.send("\r")
        term.wait_text("Welcome to kep")
    finally:
        term.close()


@pytest.mark.slow
def test_the_real_kep_in_an_untrusted_checkout_asks_first_and_runs_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fakes import hostile_checkout as hostile

    monkeypatch.setenv("KEP_STATE_DIR", str(tmp_path / "fresh-state"))  # nothing trusted
    checkout = hostile.make(tmp_path / "cloned")
    term = Terminal([*kep_argv(), "--model", "offline"], checkout)
    try:
        term.wait_text("Trust this folder?")
        term.wait_text("1 MCP server")  # (the counts: 1 executable, 1 Python pack, …)
        term.wait_text("1 executable")
        term.child.send("\x1b")  # Esc: not now
        term.wait_text("Not trusted")
        term.type("listdir .")  # a built-in, through the offline model: they still work
        term.child.send("\r")
        term.wait_text("extensions/")
        time.sleep(0.5)
        assert hostile.markers(checkout) == set()
    finally:
        term.close()


@pytest.mark.slow
def test_three_queued_calls_answered_y_y_y_in_a_real_terminal(tmp_path: Path) -> None:
    proj = make_project(tmp_path / "proj")
    (proj / "third.txt").write_text("third file\n")
    term = Terminal([*kep_argv(), "--model", "offline", "--project", str(proj)], proj)
    try:
        term.wait_text("Message kep")
        term.type("shout notes.txt; shout other.txt; shout third.txt")
        term.child.send("\r")
        for n, path in ((1, "notes.txt"), (2, "other.txt"), (3, "third.txt")):
            # All three listed and every key readable, on one finished frame (a frame can
            # arrive in several reads).
            wanted = (f'▶ {n}/3 shout {{"path": "{path}"}}  asking', "1/3", "2/3", "3/3",
                      "y allow", "n deny", "a always", "d never", "Y all", "N none")
            term.wait(lambda wanted=wanted: all(t in term.text() for t in wanted),
                      f"call {n}'s approval with every key")
            term.idle(1.0)
            term.type("y")
            term.wait(lambda n=n: len((proj / "shout.ran").read_text().split()) == n
                      if (proj / "shout.ran").exists() else False, f"call {n} to run")
        term.wait_text("3 calls: 3 finished ok")
        assert sorted((proj / "shout.ran").read_text().split()) == [
            "notes.txt", "other.txt", "third.txt"]
        assert "Message kep" in term.text()  # no y landed in the message box
        term.child.send("\x11")  # ctrl+q
        term.child.expect(pexpect.EOF, timeout=15)
    finally:
        term.close()


@pytest.mark.slow
def test_slash_list_editor_and_a_shell_line_in_a_real_terminal(tmp_path: Path) -> None:
    """Typed as a person would: `/` shows the command list, ctrl+x ctrl+e hands the terminal
    to $VISUAL and takes it back with the edited message, a `!` line runs and offers its
    output, `/quit` quits."""
    proj = make_project(tmp_path / "proj")
    (proj / "kep.toml").write_text("")  # kep's built-ins (execcmd) on
    editor = tmp_path / "editor"
    editor.write_text('#!/bin/sh\nprintf " edited" >> "$1"\n')
    editor.chmod(0o755)
    term = Terminal([*kep_argv(), "--model", "offline", "--project", str(proj)], proj,
                    VISUAL=str(editor))
    try:
        term.wait_text("Message kep")
        term.type("/")
        term.wait(lambda: "/model [PROVIDER/MODEL]" in term.text(), "the list")
        term.type("qu")
        term.wait(lambda: "/quit  quit kep" in term.text() and "/model [" not in term.text(),
                  "the narrowed list")
        term.child.send("\x1b")  # Esc closes the list
        term.wait(lambda: "/quit  quit kep" not in term.text(), "the list closed")
        term.idle(0.3)  # an Esc and the next key close together would read as alt+key
        for _ in range(3):
            term.child.send("\x7f")  # backspace: the prompt is empty again
        term.wait_text("Message kep")  # the placeholder: every backspace has landed
        term.type("draft")
        term.child.send("\x18")  # ctrl+x
        term.child.send("\x05")  # ctrl+e
        term.wait_text("draft edited")
        term.child.send("\x15")  # ctrl+u: clear the line
        for _ in range(len("draft edited")):
            term.child.send("\x7f")
        term.idle(0.3)
        term.type("!echo shell-says-hi")
        term.child.send("\r")
        term.wait_text("Add output to the message")
        assert "shell-says-hi" in term.text()
        term.type("/quit")
        term.child.send("\r")
        term.child.expect(pexpect.EOF, timeout=15)
        term.child.close()
        assert term.child.exitstatus == 0
    finally:
        term.close()
