"""Themes: bundled TOML files load; a bad file is reported by file and key, never fatal."""

from __future__ import annotations

from pathlib import Path

from textual.app import App

from tuiapp.project import config as project_config
from tuiapp.settings import paths
from tuiapp.ui.themes import load_themes, register_themes, save_theme_choice


def test_bundled_themes_load_cleanly() -> None:
    themes, errors = load_themes([paths.bundled_themes_dir()])
    assert errors == []
    names = {t.name for t in themes}
    assert {"dark", "light", "high-contrast"} <= names
    light = next(t for t in themes if t.name == "light")
    assert light.dark is False


def test_invalid_theme_files_are_reported_by_file_and_key(tmp_path: Path) -> None:
    (tmp_path / "good.toml").write_text('primary = "#112233"\n')
    (tmp_path / "badcolor.toml").write_text('primary = "#112233"\nerror = "reddish"\n')
    (tmp_path / "noprimary.toml").write_text('background = "#000000"\n')
    (tmp_path / "typo.toml").write_text('primary = "#112233"\nbackgroud = "#000000"\n')
    (tmp_path / "broken.toml").write_text("primary = \n")
    (tmp_path / "badvar.toml").write_text('primary = "#112233"\n[variables]\nborder = 3\n')
    themes, errors = load_themes([tmp_path])
    assert [t.name for t in themes] == ["good"]
    by_file = {Path(e.split(":")[0]).name: e for e in errors}
    assert set(by_file) == {"badcolor.toml", "noprimary.toml", "typo.toml", "broken.toml",
                            "badvar.toml"}
    assert ": error: not a colour: 'reddish'" in by_file["badcolor.toml"]
    assert ": primary: required" in by_file["noprimary.toml"]
    assert ": backgroud: unknown key" in by_file["typo.toml"]
    assert "not valid TOML" in by_file["broken.toml"]
    assert ": variables.border: expected a string" in by_file["badvar.toml"]


def test_user_theme_replaces_bundled_one_of_the_same_name() -> None:
    user = paths.user_themes_dir()
    user.mkdir(parents=True)
    (user / "mine.toml").write_text('name = "dark"\nprimary = "#FF0000"\n')
    themes, errors = load_themes()
    assert errors == []
    dark = [t for t in themes if t.name == "dark"]
    assert len(dark) == 1 and dark[0].primary == "#FF0000"


async def test_registered_themes_apply_and_bad_ones_do_not_stop_the_app(tmp_path: Path) -> None:
    (tmp_path / "oops.toml").write_text('primary = "nope"\n')
    app: App[None] = App()
    async with app.run_test() as pilot:
        errors = register_themes(app, [paths.bundled_themes_dir(), tmp_path])
        assert len(errors) == 1 and "oops.toml: primary" in errors[0]
        app.theme = "high-contrast"
        await pilot.pause()
        assert app.current_theme.name == "high-contrast"
        assert app.current_theme.background == "#000000"


def test_chosen_theme_is_saved_to_user_config(tmp_path: Path) -> None:
    target = save_theme_choice("light")
    assert target == paths.user_config_file()
    assert project_config.load(tmp_path).theme == "light"
