"""No sandbox: the kernel pieces are missing here, or `[sandbox] enabled = false`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from tuiapp.security.sandbox.base import Mechanism, Profile, Wrapped


class NoSandbox(Mechanism):
    name = "none"

    def __init__(self, why: str) -> None:
        self.why = why

    def missing(self) -> str | None:
        return self.why

    def wrap(self, profile: Profile, argv: Sequence[str], env: Mapping[str, str] | None,
             cwd: Path | None) -> Wrapped:
        return Wrapped(list(argv), dict(env) if env is not None else None)
