"""Where a tool comes from, as kep shows it to the user."""

from __future__ import annotations

from pathlib import Path

from tuiapp.settings import paths


def shown_source(source: str, root: Path) -> str:
    """Relative to the project, or "kep's built-in FILE" for kep's bundled functions (their
    folder is wherever kep is installed, which says nothing to the user), else as declared."""
    path = Path(source)
    try:
        return str(path.relative_to(root))
    except ValueError:
        pass
    if path.resolve().parent == Path(paths.builtin_functions_dir()).resolve():
        return f"kep's built-in {path.name}"
    return source
