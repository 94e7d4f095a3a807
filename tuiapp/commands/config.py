"""`kep config path|show`."""

from __future__ import annotations

import argparse

import tomli_w

from tuiapp.commands._common import load_config
from tuiapp.security import trust
from tuiapp.settings import paths


def main(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    if args.config_command == "path":
        untrusted = not trust.state_of(cfg).trusted
        for label, f in (
            ("user config", paths.user_config_file()),
            ("project config", cfg.project_file),
            ("user themes", paths.user_themes_dir()),
            ("data (sessions, spool)", paths.data_dir()),
            ("cache (tool declarations)", paths.cache_dir()),
            ("state (folder trust)", paths.state_dir()),
        ):
            note = "" if f.exists() else "  (not created yet)"
            if f == cfg.project_file and f.exists() and untrusted:
                note = "  (not applied: this folder is not trusted; see `kep trust`)"
            print(f"{label + ':':<27} {f}{note}")
        return 0
    from tuiapp.security import secrets

    shown = secrets.mask_config(dict(cfg.raw), secrets.collect(cfg))
    print(f"# active model: {cfg.default_model()}")
    print(f"# merged from: {', '.join(str(f) for f in cfg.files) or 'defaults only'}")
    print(f"# project root: {cfg.project_root}")
    keys = {p.api_key_env: bool(p.api_key()) for p in cfg.providers.values() if p.api_key_env}
    print(
        "# API keys: "
        + ", ".join(f"{k} {'set' if v else 'not set'}" for k, v in sorted(keys.items()))
    )
    print(tomli_w.dumps(shown), end="")
    return 0
