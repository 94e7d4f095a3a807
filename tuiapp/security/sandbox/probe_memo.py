"""A probe of the mechanism that passed, remembered in kep's cache folder: every kep start ran
a whole bwrap (~10 ms) to learn again that user namespaces work here. Only a pass is kept, and
only for what it depended on: the probe's own command, the program's file, the kernel, the
user, and the settings that open or close user namespaces to ordinary users. A failure is
never remembered: it is found again at every start, and said in one line."""

from __future__ import annotations

import hashlib
import os
import shutil

from tuiapp.settings import paths

# Settings that turn unprivileged user namespaces on or off (Debian, Ubuntu's AppArmor, all).
_SETTINGS = ("/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/user/max_user_namespaces",
             "/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
_NAME = "sandbox-probe-passed"


def key(argv: list[str]) -> str:
    """What a passed probe of `argv` held for; it is asked again when any of it changes."""
    parts = ["\0".join(argv), os.uname().release, str(os.getuid())]
    program = shutil.which(argv[0]) or argv[0]
    try:
        st = os.stat(program)
        parts.append(f"{program} {st.st_size} {st.st_mtime_ns} {st.st_ino}")
    except OSError:
        parts.append("no program")
    for setting in _SETTINGS:
        try:
            with open(setting, "rb") as f:
                parts.append(f.read(64).decode(errors="replace"))
        except OSError:
            parts.append("-")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def passed(memo: str) -> bool:
    try:
        with open(paths.cache_dir() / _NAME, "rb") as f:
            return f.read(128).decode(errors="replace") == memo
    except OSError:
        return False


def remember(memo: str) -> None:
    folder = paths.cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = folder / f".{_NAME}.{os.getpid()}"
        tmp.write_text(memo, encoding="utf-8")
        os.replace(tmp, folder / _NAME)
    except OSError:
        pass  # (asked again next time)
