"""What every subcommand needs first: the project root and its config, or a clean exit 2."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from tuiapp.security import trust
from tuiapp.settings import paths

if TYPE_CHECKING:  # config (tomllib, the settings classes) only where it is loaded
    import argparse

    from tuiapp.conversation.store import Store
    from tuiapp.settings import config_types


def project_root(args: argparse.Namespace) -> Path:
    project = getattr(args, "project", None)
    return Path(project).resolve() if project else paths.find_project_root()


def load_config(args: argparse.Namespace, *, headless: bool = True) -> config_types.Config:
    """Load user + project config; on a bad file print `kep: FILE: KEY: why` and exit 2.

    Folder trust is decided first (`--trust` trusts for this run): an untrusted project's
    .env is not read and its kep.toml not applied. Headless commands say on stderr, in one
    line each, what a trusted project gained since it was trusted (held back until `kep
    trust`) and which config keys are unknown (the TUI shows both itself)."""
    from tuiapp.project import config as project_config
    from tuiapp.settings import config_types

    root = project_root(args)
    if not root.is_dir():
        fail(f"project directory {root} does not exist")
    if getattr(args, "trust", False):
        trust.trust_for_run(root)
    state = trust.check(root)
    if state.problem:
        print(f"kep: {state.problem}; no folder is trusted until it is fixed", file=sys.stderr)
    if headless and state.gained:
        print(f"kep: since you trusted {state.root} it gained {', '.join(state.gained)}; "
              "not applied until you run `kep trust` again", file=sys.stderr)
    try:
        project_config.load_dotenv(root, state)  # held-back variables are among `gained`
        cfg = project_config.load(root, trust_state=state)
    except config_types.ConfigError as e:
        fail(str(e))
    if headless:
        from tuiapp.security.display import printable_line

        for line in cfg.warnings:
            print(f"kep: warning: {printable_line(line)}", file=sys.stderr)
    return cfg


def untrusted_contents(cfg: config_types.Config) -> str | None:
    """What an untrusted project holds that kep is not loading ("3 executables, …"), or None
    when the project is trusted or holds nothing that needs trust."""
    state = trust.state_of(cfg)
    if state.trusted:
        return None
    from tuiapp.project.inventory import inventory

    found = inventory(Path(state.root))
    return None if found.empty() else found.summary()


def require_trust(cfg: config_types.Config) -> None:
    """Headless commands that would run project code: exit 2 in an untrusted project."""
    holds = untrusted_contents(cfg)
    if holds is not None:
        fail(f"{cfg.project_root} is not trusted ({holds}): run `kep trust` to trust it, "
             "or pass --trust for this run")


def note_untrusted(cfg: config_types.Config) -> None:
    """`kep functions` in an untrusted project: built-ins are listed; one line says why the
    project's own tools are not."""
    holds = untrusted_contents(cfg)
    if holds is not None:
        print(f"kep: project tools are not loaded: {cfg.project_root} is not trusted "
              f"({holds}); run `kep trust` to trust it", file=sys.stderr)


def fail(message: str, code: int = 2) -> NoReturn:
    from tuiapp.security.display import printable

    print(f"kep: {printable(message)}", file=sys.stderr)
    raise SystemExit(code)


def take_session(store: Store, session_id: str, *, fork: bool) -> str:
    """Become the one writer of the session (or of a copy of it, with --fork); a session
    another live kep is writing is refused with one line and exit 2."""
    from tuiapp.conversation.session_lock import SessionBusy, acquire, fork_session
    from tuiapp.conversation.store_schema import StoreError

    try:
        if fork:
            session_id = fork_session(store, session_id)
        acquire(store, session_id)
    except SessionBusy as e:
        fail(str(e))
    except StoreError as e:
        fail(str(e), 1)
    return session_id


def show_source(source: str, root: Path) -> str:
    """A source as short as it stays unambiguous: project-relative, (built-in) NAME, ~/…"""
    if not source.startswith("/"):
        return source  # mcp:<server> and the like
    path = Path(source)
    builtin = paths.builtin_functions_dir()
    for base, prefix in ((root, ""), (builtin, "(built-in) ")):
        try:
            return prefix + str(path.relative_to(base))
        except ValueError:
            continue
    home = os.path.expanduser("~")
    return "~" + source[len(home):] if home != "/" and source.startswith(home + "/") else source
