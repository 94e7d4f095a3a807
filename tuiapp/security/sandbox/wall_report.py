"""The walls a failed call ran into, for the tool pane, the transcript and the model
(denials.py reads them from its output), and those the user may be offered to widen (walls.py),
under the profile the call ran with (spawn.py)."""

from __future__ import annotations

from pathlib import Path

from tuiapp.security.sandbox import spawn, walls
from tuiapp.security.sandbox import writable as writable_check
from tuiapp.security.sandbox.denials import explain


def walls_hit(text: str, *, cwd: Path | str | None, tool: str | None = None) -> list[str]:
    """The walls a call that printed `text` ran into (none when there are no walls)."""
    if not spawn.active() or not text:
        return []
    return explain(text, spawn.profile_for(cwd, tool=tool), Path(cwd) if cwd is not None else None)


def walls_to_widen(text: str, *, cwd: Path | str | None, tool: str) -> list[Path]:
    """The write walls a failed call hit that may be offered for widening (walls.py)."""
    if not spawn.active() or not text or walls.asker is None:
        return []
    prof = spawn.profile_for(cwd, tool=tool)  # never offered through a planted link (writable.py)
    return [p for p in walls.widenable(text, prof, Path(cwd) if cwd else None)
            if writable_check.safe(p, prof)]
