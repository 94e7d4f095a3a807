"""Issue 28 items 4 and 5 in a real terminal: the diff of a writefile call in the approval
panel (no raw escape reaches the screen), then /undo puts the file back."""

from __future__ import annotations

from pathlib import Path

import pexpect
import pytest
from test_tui_pty import Terminal, kep_argv
from tui_helpers import make_project

# A real kep in a terminal: these share one parallel worker (conftest.py), never two at once.
pytestmark = pytest.mark.xdist_group("pty")


@pytest.mark.slow
def test_a_write_shows_its_diff_and_undo_restores_it(tmp_path: Path) -> None:
    proj = make_project(tmp_path / "proj")
    (proj / "kep.toml").write_text("")  # kep's built-ins on
    term = Terminal([*kep_argv(), "--model", "offline", "--project", str(proj)], proj)
    try:
        term.wait_text("Message kep")
        term.type("writefile notes.txt changed words")
        term.child.send("\r")
        term.wait(lambda: all(t in term.text() for t in
                              ("Run writefile?", "notes.txt  +1 −1", "-hello from notes",
                               "+changed words")), "the diff in the approval")
        assert (proj / "notes.txt").read_text() == "hello from notes\n"  # asked, not run
        term.idle(1.0)
        term.type("y")
        term.wait(lambda: (proj / "notes.txt").read_text() == "changed words", "the write")
        term.wait_text("finished ok")
        term.type("/undo")
        term.child.send("\r")
        term.wait(lambda: (proj / "notes.txt").read_text() == "hello from notes\n", "the undo")
        term.child.send("\x11")  # ctrl+q
        term.child.expect(pexpect.EOF, timeout=15)
    finally:
        term.close()
