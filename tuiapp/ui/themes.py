"""Themes: TOML files → Textual `Theme` objects.

kep ships `themes/*.toml` (dark, light, high-contrast) and reads the user's themes dir
(`paths.user_themes_dir()`, e.g. ~/.config/kep/themes/) after it, so a user file with the same
`name` replaces a bundled theme.

File format (every key optional except `primary`; colours are anything Textual parses:
"#RRGGBB", "#RGB", "rgb(…)", "hsl(…)", a named colour):

    name = "ocean"            # default: the file name without .toml
    dark = true               # dark or light base (default true)
    primary = "#5FAFFF"       # required
    secondary = "#8A9AB5"
    accent = "#FFB454"
    foreground = "#D8DEE9"
    background = "#15171C"
    surface = "#1D2027"
    panel = "#272B34"
    boost = "#FFFFFF10"
    success = "#7EC16E"
    warning = "#E5C07B"
    error = "#EF6B73"
    luminosity_spread = 0.15  # 0..1, how far shades spread
    text_alpha = 0.95         # 0..1, opacity of normal text

    [variables]               # any Textual CSS variable, as a string
    footer-key-foreground = "#FFB454"

A bad file never stops kep: it is skipped and reported as one line naming the file and key.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from textual.app import App
from textual.color import Color, ColorParseError
from textual.theme import Theme

from tuiapp.settings import config_reader, config_types, config_writer, paths

COLOR_KEYS = ("primary", "secondary", "accent", "foreground", "background", "surface", "panel",
              "boost", "success", "warning", "error")
FRACTION_KEYS = ("luminosity_spread", "text_alpha")
KNOWN_KEYS = {"name", "dark", "variables", *COLOR_KEYS, *FRACTION_KEYS}


class ThemeFileError(Exception):
    def __init__(self, file: Path, key: str, message: str) -> None:
        self.file, self.key, self.message = file, key, message
        where = f"{file}: {key}" if key else str(file)
        super().__init__(f"{where}: {message}")


def theme_dirs() -> list[Path]:
    """Bundled themes first, then the user's (later files win on a name clash)."""
    return [paths.bundled_themes_dir(), paths.user_themes_dir()]


def parse_theme(data: dict[str, Any], file: Path) -> Theme:
    """One TOML table → Theme, or ThemeFileError naming the offending key."""
    for key in data:
        if key not in KNOWN_KEYS:
            raise ThemeFileError(file, key, f"unknown key (known: {', '.join(sorted(KNOWN_KEYS))})")
    name = data.get("name", file.stem)
    if not isinstance(name, str) or not name.strip():
        raise ThemeFileError(file, "name", "expected a non-empty string")
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ThemeFileError(file, "dark", "expected true or false")
    if "primary" not in data:
        raise ThemeFileError(file, "primary", "required (a colour such as \"#5FAFFF\")")
    colors: dict[str, str] = {}
    for key in COLOR_KEYS:
        if key in data:
            colors[key] = _color(data[key], file, key)
    fractions: dict[str, float] = {}
    for key in FRACTION_KEYS:
        if key in data:
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise ThemeFileError(file, key, f"expected a number from 0 to 1, got {value!r}")
            fractions[key] = float(value)
    variables = data.get("variables", {})
    if not isinstance(variables, dict):
        raise ThemeFileError(file, "variables", "expected a table")
    for key, value in variables.items():
        if not isinstance(value, str):
            raise ThemeFileError(file, f"variables.{key}", "expected a string")
    return Theme(name=name.strip(), dark=dark, variables=dict(variables), **colors, **fractions)


def _color(value: Any, file: Path, key: str) -> str:
    if not isinstance(value, str):
        raise ThemeFileError(file, key, f"expected a colour string, got {type(value).__name__}")
    try:
        Color.parse(value)
    except ColorParseError:
        raise ThemeFileError(file, key, f"not a colour: {value!r}") from None
    return value


def load_theme_file(file: Path) -> Theme:
    try:
        data = config_reader.read_toml(file)  # bad bytes, bad TOML, deep nesting: one line each
    except config_types.ConfigError as e:
        raise ThemeFileError(file, e.key, e.message) from None
    return parse_theme(data, file)


def load_themes(dirs: Iterable[Path] | None = None) -> tuple[list[Theme], list[str]]:
    """Every *.toml theme in `dirs` (default: bundled, then user), and one error line per bad
    file. A later theme with the same name replaces an earlier one."""
    by_name: dict[str, Theme] = {}
    errors: list[str] = []
    for d in theme_dirs() if dirs is None else dirs:
        if not d.is_dir():
            continue
        for file in sorted(d.glob("*.toml")):
            try:
                theme = load_theme_file(file)
            except ThemeFileError as e:
                errors.append(str(e))
                continue
            by_name.pop(theme.name, None)
            by_name[theme.name] = theme
    return list(by_name.values()), errors


def register_themes(app: App[Any], dirs: Iterable[Path] | None = None) -> list[str]:
    """Register every loadable theme with `app`; return the error lines for the bad files."""
    themes, errors = load_themes(dirs)
    for theme in themes:
        app.register_theme(theme)
    return errors


def set_startup_theme(app: App[Any], name: str) -> None:
    """Make `name` the theme of an app that is not running yet. Assigning `app.theme` also
    schedules a full re-parse of every stylesheet for the app's first message, after the CSS
    files are loaded (about 15 ms before the first frame); nothing is parsed yet here, so new
    variables are enough. A switch between dark and light also changes the ANSI colour
    mapping: that one takes Textual's own path."""
    theme = app.get_theme(name)
    if theme is None or theme.dark != app.current_theme.dark:
        app.theme = name
    else:
        app.set_reactive(App.theme, name)
        app.add_class(f"-theme-{name}", update=False)  # as Textual's theme watcher does
    app.stylesheet.set_variables(app.get_css_variables())


def save_theme_choice(name: str, file: Path | None = None) -> Path:
    """Remember the chosen theme in the user's config.toml (atomic write); return the file."""
    target = file or paths.user_config_file()
    config_writer.set_value(target, "theme", name)
    return target
