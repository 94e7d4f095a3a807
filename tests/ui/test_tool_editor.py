"""The in-app editor: what it refuses to edit, and saves that keep the file whole and its mode."""

from __future__ import annotations

import os
from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import Static, TextArea

from tuiapp.ui.screens.tool_editor import ToolEditor, language_of, save_text


class Host(App[None]):
    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def compose(self) -> ComposeResult:
        yield Static("host")

    def on_mount(self) -> None:
        self.push_screen(ToolEditor(self.path))


def status(app: App[None]) -> str:
    return str(app.screen.query_one("#editor-status", Static).render())


async def test_invalid_utf8_is_shown_read_only_and_never_saved(tmp_path: Path) -> None:
    path = tmp_path / "tool"
    path.write_bytes(b"#!/bin/sh\necho \xff\xfe\n")
    async with Host(path).run_test() as pilot:
        await pilot.pause()
        assert "not UTF-8" in status(pilot.app)
        assert pilot.app.screen.query_one(TextArea).read_only
        await pilot.press("ctrl+s")
        assert path.read_bytes() == b"#!/bin/sh\necho \xff\xfe\n"


async def test_a_huge_file_is_not_loaded(tmp_path: Path) -> None:
    path = tmp_path / "big.py"
    path.write_text("x = 1\n" * 400_000)  # 2.4 MB
    async with Host(path).run_test() as pilot:
        await pilot.pause()
        assert "over 2 MiB" in status(pilot.app)
        assert pilot.app.screen.query_one(TextArea).text == ""


async def test_save_keeps_the_mode_and_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "tool"
    path.write_text("#!/usr/bin/env python3\nprint('a')\n")
    path.chmod(0o750)
    async with Host(path).run_test() as pilot:
        await pilot.pause()
        area = pilot.app.screen.query_one(TextArea)
        assert area.language == "python"
        area.replace("print('b')", (1, 0), (1, 10))
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "saved" in status(pilot.app)
    assert path.read_text() == "#!/usr/bin/env python3\nprint('b')\n"
    assert path.stat().st_mode & 0o777 == 0o750
    assert sorted(os.listdir(tmp_path)) == ["tool"]


def test_language_from_suffix_or_shebang(tmp_path: Path) -> None:
    assert language_of(tmp_path / "x.sh", "") == "bash"
    assert language_of(tmp_path / "x", "#!/usr/bin/env bash\n") == "bash"
    assert language_of(tmp_path / "x", "#!/usr/bin/python3 -u\n") == "python"
    assert language_of(tmp_path / "x", "no shebang") is None


def test_a_symlinked_tool_is_saved_into_its_target_and_stays_a_link(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    target = tmp_path / "scripts" / "real"
    target.write_text("old")
    target.chmod(0o755)
    link = tmp_path / "link"
    link.symlink_to(target)
    save_text(link, "new")
    assert target.read_text() == "new" and link.is_symlink()
    assert target.stat().st_mode & 0o777 == 0o755
