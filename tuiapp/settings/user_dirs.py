"""kep's user dirs as strings, with nothing but os and sys imported: the warm `kep functions`
answer is looked up before pathlib (or platformdirs) would be imported. tuiapp.settings.paths wraps
these in Paths."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_platform: Any = None


def _platform_dirs() -> Any:
    global _platform
    if _platform is None:
        from platformdirs import PlatformDirs

        _platform = PlatformDirs("kep", appauthor=False)
    return _platform


def user_dir(xdg_var: str, default: str, attr: str) -> str:
    """platformdirs' answer. On Linux with an absolute HOME it is plain XDG, worked out here:
    importing platformdirs costs a tenth of a warm `kep functions`."""
    if sys.platform.startswith("linux"):
        xdg = os.environ.get(xdg_var, "")
        if xdg.startswith("/"):
            return os.path.join(xdg, "kep")
        home = os.environ.get("HOME", "")
        if home.startswith("/"):
            return os.path.join(os.path.expanduser(default), "kep")
    return str(getattr(_platform_dirs(), attr))


def cache_dir() -> str:
    return os.environ.get("KEP_CACHE_DIR") or user_dir("XDG_CACHE_HOME", "~/.cache",
                                                       "user_cache_dir")
