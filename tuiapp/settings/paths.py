"""Where kep keeps things: user config/data/cache/state dirs, bundled prompts and themes,
project root."""

from __future__ import annotations

import os
from pathlib import Path

from tuiapp.settings import user_dirs
from tuiapp.settings.user_dirs import user_dir as _user_dir

_PKG = Path(__file__).resolve().parent.parent  # tuiapp/


def config_dir() -> Path:
    return Path(os.environ.get("KEP_CONFIG_DIR")
                or _user_dir("XDG_CONFIG_HOME", "~/.config", "user_config_dir"))


def data_dir() -> Path:
    return Path(os.environ.get("KEP_DATA_DIR")
                or _user_dir("XDG_DATA_HOME", "~/.local/share", "user_data_dir"))


def cache_dir() -> Path:
    return Path(user_dirs.cache_dir())


def state_dir() -> Path:
    """Where kep keeps what it decided with the user (folder trust records)."""
    return Path(os.environ.get("KEP_STATE_DIR")
                or _user_dir("XDG_STATE_HOME", "~/.local/state", "user_state_dir"))


def user_config_file() -> Path:
    return config_dir() / "config.toml"


def user_themes_dir() -> Path:
    return config_dir() / "themes"


def _bundled(name: str) -> Path:
    # A checkout (or editable install) has prompts/ and themes/ beside the package;
    # a wheel carries them under tuiapp/_bundled/ (see pyproject force-include).
    repo_copy = _PKG.parent / name
    if (repo_copy / ".kep-bundled").exists():
        return repo_copy
    return _PKG / "_bundled" / name


def builtin_functions_dir() -> Path:
    return _bundled("prompts") / "functions"


def bundled_themes_dir() -> Path:
    return _bundled("themes")


def find_project_root(start: Path | None = None) -> Path:
    """Nearest ancestor holding kep.toml or prompts/, else the start directory itself."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "kep.toml").is_file() or (d / "prompts").is_dir():
            return d
    return here
