"""Kernel walls around every child kep starts: one interface (base.py), one module per
mechanism (bubblewrap.py; none.py where the kernel can't), the resolved profile (profile.py)
and the one place processes are started (spawn.py)."""

from tuiapp.security.sandbox.base import Mechanism, Profile, Wrapped
from tuiapp.security.sandbox.spawn import (
    SandboxRequired,
    configure,
    mechanism,
    prepare,
    profile_for,
    status_line,
)

__all__ = ["Mechanism", "Profile", "SandboxRequired", "Wrapped", "configure", "mechanism",
           "prepare", "profile_for", "status_line"]
