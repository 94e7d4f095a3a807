"""kep's user dirs, worked out without platformdirs on Linux, are platformdirs' answer."""

from __future__ import annotations

import sys

import pytest
from platformdirs import PlatformDirs

from tuiapp.settings import paths

DIRS = (("XDG_CONFIG_HOME", "user_config_dir", paths.config_dir, "KEP_CONFIG_DIR"),
        ("XDG_DATA_HOME", "user_data_dir", paths.data_dir, "KEP_DATA_DIR"),
        ("XDG_CACHE_HOME", "user_cache_dir", paths.cache_dir, "KEP_CACHE_DIR"))


@pytest.mark.parametrize(
    "xdg", [None, "", "/x/xdg", "/x/xdg/", "relative/xdg", " /lead", "/a b/\tc"])
@pytest.mark.parametrize("home", ["/home/ann", "/home/ann/", "/", "relative-home", "", None])
def test_user_dirs_match_platformdirs(
    monkeypatch: pytest.MonkeyPatch, xdg: str | None, home: str | None
) -> None:
    for var, attr, func, override in DIRS:
        monkeypatch.delenv(override, raising=False)
        if xdg is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, xdg)
        if home is None:
            monkeypatch.delenv("HOME", raising=False)
        else:
            monkeypatch.setenv("HOME", home)
        try:
            expected = str(getattr(PlatformDirs("kep", appauthor=False), attr))
        except RuntimeError:  # platformdirs cannot tell (a relative HOME and no passwd entry)
            continue
        assert str(func()) == str(type(func())(expected)), (var, xdg, home)


def test_kep_overrides_win(monkeypatch: pytest.MonkeyPatch) -> None:
    for var, _, func, override in DIRS:
        monkeypatch.setenv(var, "/elsewhere")
        monkeypatch.setenv(override, f"/kep/{var}")
        assert str(func()) == f"/kep/{var}"


def test_linux_answer_needs_no_platformdirs_import() -> None:
    import subprocess

    code = ("import sys; from tuiapp.settings import paths; paths.config_dir(); paths.cache_dir(); "
            "print('platformdirs' in sys.modules)")
    env = {"HOME": "/home/ann", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout.strip()
    assert out == ("False" if sys.platform.startswith("linux") else "True")
