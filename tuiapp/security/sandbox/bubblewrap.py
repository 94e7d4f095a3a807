"""bubblewrap (bwrap, from the distribution's packages): user, PID, IPC and network namespaces
and a private mount table, with no root and no setuid helper.

Why bwrap and not Landlock alone: Landlock allows by listing, so "everything readable except
~/.ssh" needs a rule for every sibling of every hidden path, and it has no PID namespace (a
`setsid` double fork would outlive the call) and no way to offer loopback-only networking.
bwrap gives all three with one exec, and Landlock stays free for a later per-call scope
inside the fork server. That exec is not cheap: with kep's walls about 8 ms of CPU more than
a plain exec on a 2-core VM (new namespaces, a dozen mounts, bwrap reading
/proc/self/mountinfo at every bind). So walls used a third time get a resident starter
(starters.py, _child_starter.py) that holds them and makes each call's own namespaces in a fork.

The walls, in bwrap's order (later mounts cover earlier ones):
  / read-only; /dev minimal; /proc of the new PID namespace (kep, its watchdog and other tools
  are not in it), its /proc/sys read-only; /tmp and /run private (host service sockets live in
  /run); the project root writable; its .git, kep.toml and tool folders read-only again; hidden
  paths covered by an empty folder or an empty file; kep's private cache and this call's own
  output file writable.
All capabilities are dropped (as root the sandbox's uid 0 could otherwise unmount a hidden
path) and no nested user namespace may be made (it would bring them back).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from tuiapp.security.sandbox.base import Mechanism, Profile, Resident, Wrapped
from tuiapp.security.subpath import under as _under  # on strings: the hot path

# Set for runtimes inside the sandbox so their caches land in the private cache folder, not
# in the user's real (read-only there) home folders. Not PYTHONPYCACHEPREFIX: a prefix makes
# Python ignore the interpreter's and the venv's compiled files (everything is compiled again,
# twice the start-up), and bytecode one call plants in a shared folder would be loaded,
# unchecked, by the next call's Python, the fork server's included. Without it, read-only
# folders simply get no bytecode written.
CACHE_ENV = {
    "npm_config_cache": "npm",
    "PIP_CACHE_DIR": "pip",
    "XDG_CACHE_HOME": "xdg",
    "UV_CACHE_DIR": "uv",
}


# bwrap's options before this call's own files, the remounts that go last, and the variables
# that point runtimes at the private cache folder (none when it could not be made).
_Built = tuple[list[str], list[str], dict[str, str]]


class Bubblewrap(Mechanism):
    name = "bubblewrap"
    how = ("a bwrap per call; walls used again get a resident starter that forks each call "
           "into namespaces of its own (listers: a thread and a posix_spawn each)")

    def __init__(self, binary: str | None = None) -> None:
        self.binary = binary or shutil.which("bwrap")
        self.nsenter = shutil.which("nsenter")
        self._missing: str | None = None
        self._checked = False
        # Per profile: the paths its walls depend on; per (profile, their kinds): the walls.
        self._paths: dict[tuple[object, ...], tuple[str, ...]] = {}
        self._built: dict[tuple[object, ...], _Built] = {}
        self._resident: dict[tuple[object, ...], list[str]] = {}

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
        key, (head, remount, cache_env) = self._walls(profile)
        args = list(head)
        for extra in profile.call_files:
            if _regular(str(extra)):
                args += ["--bind", str(extra), str(extra)]
        for own in profile.kep_files:  # read-only, in the empty folder hiding the rest
            if _regular(str(own)):
                args += ["--ro-bind", str(own), str(own)]
        args += remount
        if cwd is not None:
            args += ["--chdir", str(cwd)]
        out_env = dict(os.environ if env is None else env)
        if profile.proxy is not None:
            url = profile.proxy[1]
            for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
                out_env[var] = url
            # Node's fetch and http read those only when told to (Node 22.21+, 24); older
            # ones ignore this and still reach nothing but the proxy.
            out_env["NODE_USE_ENV_PROXY"] = "1"
            for var in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
                out_env.pop(var, None)
        for var, value in cache_env.items():
            out_env[var] = value  # yours are read-only here
        resident = None
        if not profile.call_files and not profile.kep_files:  # no file of this call's own
            walls = self._resident.get(key)
            if walls is None:
                walls = self._resident[key] = _starter_walls([*head, *remount])
            resident = Resident(key, walls, list(argv))
        return Wrapped([*args, "--", *argv], out_env, resident)

    def _walls(self, profile: Profile) -> tuple[tuple[object, ...], _Built]:
        """bwrap's options for `profile` (all but this call's own files and the remounts),
        kept per profile and per state of the paths they depend on: building them at every
        call cost about a millisecond of kep's CPU (Path objects, ~60 stat() calls), while
        one lstat() per path tells whether anything changed (a hidden file made since, a
        folder gone), so a path created later is still hidden at the next call."""
        base = (profile.root, profile.readonly, profile.hidden, profile.writable,
                profile.visible, profile.network, profile.cache, profile.hidden_sockets,
                profile.proxy[0] if profile.proxy is not None else None)
        paths = self._paths.get(base)
        if paths is None:
            if len(self._paths) >= 256 or len(self._built) >= 1024:
                self._paths.clear()
                self._built.clear()
                self._resident.clear()
            if profile.cache is not None:  # made now: made by the build, it changed the key
                _ensure_dir(profile.cache)
            paths = self._paths[base] = tuple(str(p) for p in (
                *profile.hidden_sockets, *profile.visible, *profile.writable,
                *profile.readonly, *profile.hidden,
                *((profile.cache,) if profile.cache is not None else ())))
        key = (base, tuple(map(_kind, paths)))
        built = self._built.get(key)
        if built is None:
            built = self._built[key] = self._build(profile)
        return key, built

    def _build(self, profile: Profile) -> _Built:
        args = [self.binary or "bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc",
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
        # /proc/sys read-only: bwrap (0.8) leaves it writable, and a call run as the host's
        # root (kep as root) writes global kernel settings without any capability
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                 "--ro-bind-try", "/proc/sys", "/proc/sys",
                 "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger", "--tmpfs", "/tmp"]
        for sock in profile.hidden_sockets:
            if _kind(str(sock)) == _DIR:
                args += ["--tmpfs", str(sock)]
        root = profile.root
        bound: list[Path] = []
        for v in profile.visible:  # only the private /tmp can hide them; elsewhere / shows them
            if _under(v, Path("/tmp")) and not _under(v, root) and _kind(str(v)) in (_DIR, _FILE):
                args += ["--ro-bind", str(v), str(v)]
                bound.append(v)
        args += ["--bind", str(root), str(root)]
        for w in profile.writable:
            if _kind(str(w)) in (_DIR, _FILE, _LINK):
                args += ["--bind", str(w), str(w)]
        for ro in profile.readonly:
            if _kind(str(ro)) != _NONE:
                args += ["--ro-bind", str(ro), str(ro)]
        shown = (root, *profile.writable, *bound)  # a hidden path in them is hidden again
        remount: list[str] = []  # last: what is mounted inside a hidden folder must fit first
        for h in profile.hidden:
            if _under(h, Path("/tmp")) and not any(_under(h, s) for s in shown):
                continue  # gone already with the private /tmp
            kind = _kind(str(h))
            if kind == _DIR:
                args += ["--tmpfs", str(h)]
                remount += ["--remount-ro", str(h)]
            elif kind != _NONE:
                args += ["--ro-bind", "/dev/null", str(h)]
        cache_env: dict[str, str] = {}
        if profile.cache is not None and _ensure_dir(profile.cache):
            args += ["--bind", str(profile.cache), str(profile.cache)]
            cache_env = {var: str(profile.cache / sub) for var, sub in CACHE_ENV.items()}
        return args, remount, cache_env


def _starter_walls(args: list[str]) -> list[str]:
    """The same walls for a resident starter (starters.py): it keeps the capabilities of its
    user namespace, as uid 0 there, to make each call's namespaces, and drops them, with a
    seccomp filter in place of --disable-userns, in each call before the exec."""
    out = list(args)
    at = out.index("--unshare-user") + 1
    if out[at:at + 1] == ["--uid"]:
        del out[at:at + 4]
    out[at:at] = ["--uid", "0", "--gid", "0"]
    out.remove("--disable-userns")
    cap = out.index("--cap-drop")
    out[cap:cap + 2] = ["--cap-add", "ALL"]
    return out


# What a path is, by lstat(): the walls depend on nothing else of it.
_NONE, _DIR, _FILE, _LINK, _DANGLING = range(5)


def _kind(path: str) -> int:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return _NONE
    if stat.S_ISLNK(mode):
        return _LINK if os.path.exists(path) else _DANGLING
    return _DIR if stat.S_ISDIR(mode) else _FILE


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _ensure_dir(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        return True
    except OSError:
        return False
