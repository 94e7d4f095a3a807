"""`kep trust [DIR]`: trust a project folder (and everything under it); `--list`, `--forget`.

Trusting runs nothing: it records the folder, and what its kep.toml and mcp.json allow
without asking, in the user's state dir. The next kep run in it lists its tools.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tuiapp.commands._common import fail, project_root
from tuiapp.project.inventory import inventory
from tuiapp.security import trust


def main(args: argparse.Namespace) -> int:
    if args.list:
        return _list()
    target = Path(args.dir).expanduser() if args.dir else project_root(args)
    if not target.is_dir():
        fail(f"{target} is not a directory")
    try:
        if args.forget:
            if trust.forget(target):
                print(f"no longer trusted: {_show(str(target.resolve()))}")
                return 0
            covering = trust.check(target)
            note = f" (it is covered by {covering.via})" if covering.trusted else ""
            fail(f"{target.resolve()} has no trust record of its own{note}", 1)
        real = trust.trust(target)
    except trust.TrustError as e:
        fail(str(e), 1)
    print(f"trusted {_show(real)}: {inventory(Path(real)).summary()}")
    print("  (this covers every folder under it; `kep trust --forget` takes it back)")
    return 0


def _list() -> int:
    try:
        dirs = trust.records()
    except trust.TrustError as e:
        fail(str(e), 1)
    if not dirs:
        print("No folder is trusted yet (`kep trust DIR` trusts one).")
        return 0
    for path in sorted(dirs):
        when = dirs[path].get("trusted_at", "")
        shown = _show(path)
        print(f"{shown}  (since {_show(when)})" if isinstance(when, str) and when else shown)
    return 0


def _show(text: str) -> str:
    """A path as the terminal should see it: control characters quoted, never interpreted."""
    return text if text.isprintable() else repr(text)
