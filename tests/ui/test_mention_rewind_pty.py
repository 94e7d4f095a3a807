"""Issue 28 items 2, 3 and 5 in a real terminal: `@` lists files as you type and tab takes
one, the sent message shows chips (never the file), an image the offline model can't take is
one line, a file name with an escape sequence shows as text, and ctrl+up opens the rewind
picker on your earlier message."""

from __future__ import annotations

from pathlib import Path

import pexpect
import pytest
from test_tui_pty import Terminal, kep_argv
from tui_helpers import make_project

# A real kep in a terminal: these share one parallel worker (conftest.py), never two at once.
pytestmark = pytest.mark.xdist_group("pty")

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64


@pytest.mark.slow
def test_mentions_an_image_and_rewind_in_a_real_terminal(tmp_path: Path) -> None:
    proj = make_project(tmp_path / "proj")
    (proj / "picture.png").write_bytes(PNG)
    (proj / "evil\x1b[2Jname.txt").write_text("x\n")  # would clear the screen if drawn raw
    term = Terminal([*kep_argv(), "--model", "offline", "--project", str(proj)], proj)
    try:
        term.wait_text("Message kep")
        term.type("compare @not")
        term.wait_text("notes.txt", timeout=15)
        term.child.send("\t")
        term.type("and @pic")
        term.wait(lambda: "picture.png" in term.text(), "picture.png listed")
        term.child.send("\t")
        term.type("and @evi")
        term.wait(lambda: "name.txt" in term.text(), "the hostile name listed")
        term.idle(0.5)
        assert "Welcome to kep" in term.text()  # no raw escape cleared the screen
        term.child.send("\x1b")  # Esc: close the list, keep the text
        term.idle(0.3)
        term.wait(lambda: "compare @notes.txt and @picture.png and @evi" in term.text(),
                  "both mentions taken by tab")
        term.child.send("\r")
        term.wait(lambda: "notes.txt · text, 17 B" in term.text(), "the file's chip")
        term.wait_text("@picture.png: offline takes no images; not sent")
        assert "hello from notes" not in term.text()  # a chip, not the file
        term.idle(1.0)
        term.child.send("\x1b[1;5A")  # ctrl+up
        term.wait_text("Rewind to one of your messages")
        term.wait(lambda: "compare @notes.txt" in term.text(), "the message to rewind to")
        term.child.send("\x1b")
        term.wait(lambda: "Rewind to one" not in term.text(), "the picker closed")
        term.child.send("\x11")  # ctrl+q
        term.child.expect(pexpect.EOF, timeout=15)
    finally:
        term.close()
