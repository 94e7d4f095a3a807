"""The folder-trust verdict for one project root: plain data, decided by tuiapp.security.trust
and carried by a loaded Config."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TrustState:
    """What is in force for one project root (a real path)."""

    root: str
    trusted: bool
    via: str = ""  # the trusted directory that covers root, or "--trust"
    # Item keys still in force when the project gained items since it was trusted;
    # None: everything the project declares is in force.
    accepted: frozenset[str] | None = None
    gained: tuple[str, ...] = ()  # labels of the held-back items, for notices
    problem: str = field(default="", compare=False)  # unreadable records (treated as none)

    def allows(self, key: str) -> bool:
        return self.trusted and (self.accepted is None or key in self.accepted)
