"""`kep new NAME [--format F] [--lang L]`: a working tool from a template, where kep finds it.

Prints the path of the new file (and anything else it changed); never overwrites.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tuiapp.commands._common import fail, load_config
from tuiapp.tools.templates import TemplateError, create


def aitool_dirs(cfg: object) -> tuple[Path, ...]:
    """Configured AITool source directories, as absolute paths."""
    root: Path = cfg.project_root  # type: ignore[attr-defined]
    out = []
    for src in cfg.tools.sources:  # type: ignore[attr-defined]
        if src.format == "aitool":
            p = Path(src.path).expanduser()
            p = p if p.is_absolute() else root / p
            if p.is_dir():
                out.append(p)
    return tuple(out)


def main(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    try:
        made = create(cfg.project_root, args.name, args.format, args.lang,
                      aitool_dirs=aitool_dirs(cfg))
    except TemplateError as e:
        fail(str(e))
    except OSError as e:
        fail(f"cannot write the new tool: {e.strerror or e}", 1)
    print(made.path)
    for note in made.notes:
        print(f"kep: {note}")
    return 0
