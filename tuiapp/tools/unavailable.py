"""Why a tool the user names is not offered (its file is broken, the project's folder is not
trusted). The opened project, which knows, sets `explain` (one project a process); the offline
model, which can't look at the registry or trust itself, asks it. Kept apart from the
providers so that setting it costs a listing nothing."""

from __future__ import annotations

from collections.abc import Callable

explain: Callable[[str], str | None] | None = None
