"""Folders kep makes in $TMPDIR (the network proxy's socket folder): whoever can remove them
after kep is gone is told of each. kep's watchdog does, since a SIGKILL skips every handler
of kep's own. A module of its own, light to import: the watchdog is started for every
command, the fastest included."""

from __future__ import annotations

from collections.abc import Callable

# Set by the watchdog's starter (tools.lifetime); by default nobody is told.
on_folder: Callable[[str], None] = lambda path: None  # noqa: E731


def made(path: str) -> None:
    on_folder(path)
