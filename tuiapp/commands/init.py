"""`kep init`: copy kep's built-in functions into ./prompts/functions/ for editing.

Like `git init`, it works on the current directory (or --project DIR), not on an enclosing
project. Exec bits are kept; existing files are never overwritten without --force. The copies
then override the built-ins by name.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from tuiapp.settings import paths


def main(args: argparse.Namespace) -> int:
    root = Path(args.project).resolve() if args.project else Path.cwd()
    if not root.is_dir():
        print(f"kep: project directory {root} does not exist", file=sys.stderr)
        return 2
    src = paths.builtin_functions_dir()
    dest = root / "prompts" / "functions"
    if os.path.realpath(src) == os.path.realpath(dest):
        print(f"{dest} is where kep's built-ins live already; nothing to copy")
        return 0
    files = sorted(p for p in src.iterdir() if p.is_file() and not p.name.startswith("."))
    dest.mkdir(parents=True, exist_ok=True)
    kept = 0
    for f in files:
        target = dest / f.name
        if target.exists() and not args.force:
            print(f"  kept     {target} (exists)")
            kept += 1
            continue
        existed = target.exists()
        tmp = target.with_name(f".{target.name}.kep-init")
        shutil.copy2(f, tmp)  # content and mode (exec bits)
        os.replace(tmp, target)
        print(f"  {'replaced' if existed else 'created '} {target}")
    if kept:
        print(
            f"{kept} file{'s' if kept != 1 else ''} already existed and were kept; "
            "use --force to overwrite",
            file=sys.stderr,
        )
    print("Edit them there: a project's functions override kep's built-ins of the same name.")
    return 0
