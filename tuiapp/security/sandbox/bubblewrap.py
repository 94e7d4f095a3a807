"""bubblewrap (bwrap, from the distribution's packages): user, PID, IPC and network namespaces
and a private mount table, with no root and no setuid helper.

Why bwrap and not Landlock alone: Landlock allows by listing, so "everything readable except
~/.ssh" needs a rule for every sibling of every hidden path, and it has no PID namespace (a
`setsid` double fork would outlive the call) and no way to offer loopback-only networking.
bwrap gives all three with one exec (about 1-3 ms here), and Landlock stays free for a later
per-call scope inside the fork server.

The walls, in bwrap's order (later mounts cover earlier ones):
  / read-only; /dev minimal; /proc of the new PID namespace (kep, its watchdog and other tools
  are not in it); /tmp and /run private (host service sockets live in /run); the project root
  writable; its .git, kep.toml and tool folders read-only again; hidden paths covered by an empty
  folder or an empty file; kep's private cache and this call's own output file writable.
All capabilities are dropped (as root the sandbox's uid 0 could otherwise unmount a hidden
path) and no nested user namespace may be made (it would bring them back).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from tuiapp.security.sandbox.base import Mechanism, Profile, Wrapped
from tuiapp.security.subpath import under as _under  # on strings: the hot path

# Set for runtimes inside the sandbox so their caches land in the private cache folder, not
# in the user's real (read-only there) home folders.
CACHE_ENV = {
    "npm_config_cache": "npm",
    "PIP_CACHE_DIR": "pip",
    "PYTHONPYCACHEPREFIX": "pycache",
    "XDG_CACHE_HOME": "xdg",
    "UV_CACHE_DIR": "uv",
}


class Bubblewrap(Mechanism):
    name = "bubblewrap"

    def __init__(self, binary: str | None = None) -> None:
        self.binary = binary or shutil.which("bwrap")
        self.nsenter = shutil.which("nsenter")
        self._missing: str | None = None
        self._checked = False

    def missing(self) -> str | None:
        if self._checked:
            return self._missing
        self._checked = True
        if not self.binary:
            self._missing = ("bubblewrap is not installed (Debian/Ubuntu: apt-get install "
                             "bubblewrap; Fedora: dnf install bubblewrap)")
        elif not Path("/proc/self/ns/user").exists():
            self._missing = "this kernel has no user namespaces"
        return self._missing

    def holder_argv(self, argv: Sequence[str], sock_dir: str) -> list[str] | None:
        # One user namespace that owns the network namespace (bwrap would nest a second one,
        # which a joining call could not use to enter the network namespace).
        unshare = shutil.which("unshare")
        if not self.nsenter or not unshare:
            return None
        return [unshare, "--user", "--map-root-user", "--net", "--", *argv]

    def probe_argv(self) -> list[str] | None:
        assert self.binary is not None
        return [self.binary, "--unshare-user", "--unshare-pid", "--unshare-net",
                "--disable-userns", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--proc", "/proc",
                "--", "/bin/true"]

    def wrap(self, profile: Profile, argv: Sequence[str], env: Mapping[str, str] | None,
             cwd: Path | None) -> Wrapped:
        assert self.binary is not None
        args = [self.binary, "--unshare-user", "--unshare-pid", "--unshare-ipc",
                "--unshare-uts", "--unshare-cgroup-try", "--disable-userns", "--cap-drop", "ALL",
                "--die-with-parent", "--new-session"]
        if profile.proxy is not None:
            # Join the shared namespace where the bridge to kep's proxy listens (a namespace
            # per call would cost its creation every time, and could hold no bridge).
            args = [self.nsenter or "nsenter", "--user", "--net", "-t", str(profile.proxy[0]),
                    "--preserve-credentials", "--", *args]
            # (root in the joined namespace: map back to the user's own ids inside)
            args[args.index("--unshare-user") + 1:args.index("--unshare-user") + 1] = [
                "--uid", str(os.getuid()), "--gid", str(os.getgid())]
        else:  # "off", or no proxy to join ("on" included): loopback only, nothing outside
            args.append("--unshare-net")
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        for sock in profile.hidden_sockets:
            if sock.is_dir() and not sock.is_symlink():
                args += ["--tmpfs", str(sock)]
        root = profile.root
        bound: list[Path] = []
        for v in profile.visible:  # only the private /tmp can hide them; elsewhere / shows them
            if _under(v, Path("/tmp")) and not _under(v, root) and v.exists() \
                    and not v.is_symlink():
                args += ["--ro-bind", str(v), str(v)]
                bound.append(v)
        args += ["--bind", str(root), str(root)]
        for w in profile.writable:
            if w.exists():
                args += ["--bind", str(w), str(w)]
        for ro in profile.readonly:
            if ro.exists() or ro.is_symlink():
                args += ["--ro-bind", str(ro), str(ro)]
        shown = (root, *profile.writable, *bound)  # a hidden path in them is hidden again
        remount: list[str] = []  # last: what is mounted inside a hidden folder must fit first
        for h in profile.hidden:
            if _under(h, Path("/tmp")) and not any(_under(h, s) for s in shown):
                continue  # gone already with the private /tmp
            if h.is_dir() and not h.is_symlink():
                args += ["--tmpfs", str(h)]
                remount += ["--remount-ro", str(h)]
            elif h.exists() or h.is_symlink():
                args += ["--ro-bind", "/dev/null", str(h)]
        out_env = dict(os.environ if env is None else env)
        if profile.proxy is not None:
            url = profile.proxy[1]
            for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
                out_env[var] = url
            for var in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
                out_env.pop(var, None)
        if profile.cache is not None:
            with_cache = _ensure_dir(profile.cache)
            if with_cache:
                args += ["--bind", str(profile.cache), str(profile.cache)]
                for var, sub in CACHE_ENV.items():
                    out_env.setdefault(var, str(profile.cache / sub))
        for extra in profile.call_files:
            if extra.is_file() and not extra.is_symlink():
                args += ["--bind", str(extra), str(extra)]
        for own in profile.kep_files:  # read-only, in the empty folder hiding the rest
            if own.is_file() and not own.is_symlink():
                args += ["--ro-bind", str(own), str(own)]
        args += remount
        if cwd is not None:
            args += ["--chdir", str(cwd)]
        return Wrapped([*args, "--", *argv], out_env)


def _ensure_dir(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        return True
    except OSError:
        return False
