"""The paths no tool may see: one list, used by the sandbox (hidden from children), by kep's
own file built-ins (refused), and by `kep sandbox --explain` (shown).

Hidden are the project's `.env` files, kep's own config, data, state and cache folders, and
well-known credential paths. `[sandbox] hidden` adds more."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from tuiapp.security.subpath import real, under
from tuiapp.settings import paths

# Credential stores of common tools, relative to the home folder. Browser profiles are whole
# folders: they hold cookies and saved passwords.
CREDENTIAL_PATHS: tuple[str, ...] = (
    ".ssh", ".aws", ".azure", ".config/gcloud", ".config/gh", ".config/hub", ".netrc",
    ".git-credentials", ".gnupg", ".password-store", ".docker/config.json", ".kube",
    ".pypirc", ".npmrc", ".yarnrc", ".cargo/credentials", ".cargo/credentials.toml",
    ".config/op", ".vault-token", ".terraform.d/credentials.tfrc.json",
    ".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware",
    ".config/microsoft-edge", ".local/share/keyrings", ".thunderbird",
)


def is_dotenv_name(name: str) -> bool:
    """`.env` and its variants (`.env.local`, `.env.production`); not `.envrc` or `env`."""
    return name == ".env" or name.startswith(".env.")


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def kep_dirs() -> list[Path]:
    """kep's own folders: keys, trust records, sessions and caches live there."""
    return [paths.config_dir(), paths.data_dir(), paths.state_dir(), paths.cache_dir()]


def credential_paths(home: Path | None = None) -> list[Path]:
    base = home or _home()
    return [base / rel for rel in CREDENTIAL_PATHS]


def hidden_paths(extra: Iterable[str | Path] = ()) -> list[Path]:
    """Every hidden path outside the project, made absolute (existing or not)."""
    out = [*kep_dirs(), *credential_paths()]
    out += [Path(os.path.expanduser(str(p))) for p in extra]
    return [Path(os.path.abspath(p)) for p in out]


def is_hidden(path: str | Path, extra: Iterable[str | Path] = ()) -> bool:
    """True when `path` (resolved, links followed) is a `.env` file or lies under a hidden path.

    The caller must pass the path it will really open (resolve first): a link named
    `notes.txt` that points at `.env` is hidden too."""
    opened = real(path)
    if any(is_dotenv_name(part) for part in opened.parts):
        return True
    return any(under(opened, real(base)) or under(opened, base) for base in hidden_paths(extra))
