"""What every subcommand needs first: the project root and its config, or a clean exit 2."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from tuiapp import paths

if TYPE_CHECKING:  # config (tomllib, the settings classes) only where it is loaded
    from tuiapp import config
    from tuiapp.core.store import Store


def project_root(args: argparse.Namespace) -> Path:
    project = getattr(args, "project", None)
    return Path(project).resolve() if project else paths.find_project_root()


def load_config(args: argparse.Namespace, *, warn: bool = True) -> config.Config:
    """Load user + project config; on a bad file print `kep: FILE: KEY: why` and exit 2.
    Unknown keys are a warning line each on stderr (the TUI shows them itself: warn=False)."""
    from tuiapp import config

    root = project_root(args)
    if not root.is_dir():
        fail(f"project directory {root} does not exist")
    try:
        config.load_dotenv(root)
        cfg = config.load(root)
    except config.ConfigError as e:
        fail(str(e))
    if warn:
        for line in cfg.warnings:
            print(f"kep: warning: {line}", file=sys.stderr)
    return cfg


def fail(message: str, code: int = 2) -> NoReturn:
    print(f"kep: {message}", file=sys.stderr)
    raise SystemExit(code)


def take_session(store: Store, session_id: str, *, fork: bool) -> str:
    """Become the one writer of the session (or of a copy of it, with --fork); a session
    another live kep is writing is refused with one line and exit 2."""
    from tuiapp.core.session_lock import SessionBusy, acquire, fork_session
    from tuiapp.core.store import StoreError

    try:
        if fork:
            session_id = fork_session(store, session_id)
        acquire(store, session_id)
    except SessionBusy as e:
        fail(str(e))
    except StoreError as e:
        fail(str(e), 1)
    return session_id
