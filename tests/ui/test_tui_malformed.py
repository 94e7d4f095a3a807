"""The TUI with malformed input files: it starts, and says what is wrong in a notification."""

from __future__ import annotations

from pathlib import Path

from tui_helpers import app_for, make_project, until

from tuiapp.settings import paths


async def test_the_tui_starts_with_a_binary_theme_and_says_so(tmp_path: Path) -> None:
    d = paths.user_themes_dir()
    d.mkdir(parents=True, exist_ok=True)
    (d / "junk.toml").write_bytes(b"\x00\x01\xff\xfe" * 1000)
    app = app_for(make_project(tmp_path / "p"))
    async with app.run_test() as pilot:
        await until(pilot, lambda: any("junk.toml" in str(n.message)
                                       for n in app._notifications), what="a notification")
