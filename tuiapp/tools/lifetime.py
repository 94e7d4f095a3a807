"""Nothing kep starts outlives it: tools, their children, `setsid` grandchildren, MCP servers.

1. kep marks its environment with KEP_OWNER=<token> before it starts anything (and Proc.spawn
   puts the mark back into any environment built without it), so every descendant carries it,
   whatever spawned it: a tool, its children, a `setsid` grandchild, the MCP SDK, discovery.
2. A small watchdog, "kep-reaper", in a session of its own (a closing terminal or a signal to
   kep's process group does not reach it), holds the read end of a pipe whose write end only
   kep has. The kernel closes that end however kep ends: exit, crash, SIGKILL. The watchdog
   then kills every process whose environment carries the token, sweeping until none is left
   (a fork in progress is caught by the next sweep), and exits.
3. SIGTERM and SIGHUP are handled: kep kills its tools' process groups and everything marked
   with its token at once, then ends (the TUI first leaves the screen cleanly on SIGTERM).

Why not the other kernel helps. PR_SET_PDEATHSIG needs a preexec_fn, which makes every spawn
a full fork of kep instead of a vfork (measured here: 17 ms instead of 4 ms per call, worse
with a big heap), and reaches only the direct child anyway. PR_SET_CHILD_SUBREAPER would make
orphans kep's children, but asyncio's child watcher never reaps pids it did not start, so they
would pile up as zombies in a long session; and after a SIGKILL they still escape to init.
A cgroup v2 would be exact, but is rarely writable for a user process (it is not here).

On SIGTERM/SIGHUP kep also walks its process tree (parent links, read before any kill), so a
descendant that stripped the mark and left its group is found while its parent still lives.
What cannot be covered: such a descendant (`env -i setsid …`) when kep is SIGKILLed: its
parent chain is cut as kep dies, and nothing else links it to kep.
Linux only (the watchdog reads /proc); elsewhere only the SIGTERM/SIGHUP handling applies.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

OWNER_VAR = "KEP_OWNER"
SWEEP_FOR = 1.5  # seconds the reaper keeps sweeping (catches a fork in progress)

_token: str | None = None
_reaper: subprocess.Popen[bytes] | None = None
_told: int | None = None  # the write end of the watchdog's pipe (its closing: kep is gone)
_on_terminate: Callable[[int], None] | None = None
_told_lock = threading.Lock()
_untold: list[str] = []  # folders to tell the watchdog of once it runs

# The watchdog, run as `python -S -I -c REAPER kep-reaper TOKEN`: no kep import, so it starts in
# milliseconds and keeps working whatever happens to kep's own files.
REAPER = r"""
import os, signal, sys, time
token = sys.argv[2]
for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE):
    signal.signal(s, signal.SIG_IGN)
told = b""
try:
    while chunk := os.read(0, 4096):
        told += chunk
except OSError:
    pass
# Folders kep asked to have removed if it dies (its proxy's socket folder in $TMPDIR): a
# SIGKILL skips every handler of kep's own. Only such a folder, and only its socket.
for line in told.decode("utf-8", "replace").splitlines():
    path = line.removeprefix("rmdir ")
    if line.startswith("rmdir /") and os.path.basename(path).startswith("kep-net-"):
        for remove, target in ((os.unlink, os.path.join(path, "proxy.sock")), (os.rmdir, path)):
            try:
                remove(target)
            except OSError:
                pass
me = os.getpid()
def marked():
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        for item in env.split(b"\0"):
            if item.startswith(b"KEP_OWNER=") and token.encode() in item[10:].split(b" "):
                yield int(name)
                break
deadline = time.monotonic() + float(sys.argv[3])
quiet = 0
while time.monotonic() < deadline and quiet < 3:
    found = 0
    for pid in marked():
        found += 1
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    quiet = quiet + 1 if not found else 0
    time.sleep(0.02)
"""


def token() -> str | None:
    return _token


def arm() -> None:
    """Mark kep's environment, start the watchdog, handle SIGTERM/SIGHUP. Idempotent; call
    before anything is spawned (the CLI does, for every command that can run tools)."""
    global _token
    if _token is not None:
        return
    _token = f"{os.getpid()}.{time.monotonic_ns()}"
    if sys.platform.startswith("linux"):
        inherited = os.environ.get(OWNER_VAR, "").split()
        # An outer kep's token is kept: a kep run by another kep's tool dies with either.
        os.environ[OWNER_VAR] = " ".join([*inherited[-7:], _token])
        # Started beside kep's own start-up (a fork+exec costs ~10 ms): whatever is spawned
        # meanwhile already carries the mark, and the watchdog finds it when it looks.
        from tuiapp.security.sandbox import temp_folders

        temp_folders.on_folder = _remove_at_death  # now: a folder made meanwhile is kept
        threading.Thread(target=_start_reaper, args=(_token,), daemon=True).start()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):  # not the main thread: leave it
            signal.signal(sig, _terminate)


def _start_reaper(tok: str) -> None:
    global _reaper, _told
    read_end, write_end = os.pipe()  # both ends close-on-exec: no child inherits them
    try:
        env = {k: v for k, v in os.environ.items() if k != OWNER_VAR}
        from tuiapp.security.sandbox import spawn

        _reaper = spawn.popen_unconfined(
            [sys.executable, "-S", "-I", "-c", REAPER, "kep-reaper", tok, str(SWEEP_FOR)],
            "watchdog",
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # out of the terminal's reach: it must outlive kep
            close_fds=True,
            env=env,
            cwd="/",
        )
        with _told_lock:  # folders made while the watchdog was starting: told now
            _told = write_end
            for path in _untold:
                _tell(path)
            _untold.clear()
    except Exception:  # OSError, or an import cut short because kep is already exiting
        os.close(write_end)  # no watchdog: the signal handlers still work
    finally:
        os.close(read_end)
    # The write end stays open until kep ends: its closing is the message.


def _remove_at_death(path: str) -> None:
    """Have the watchdog remove `path` (a folder of kep's in $TMPDIR) when kep is gone,
    however it ends; a normal exit removes it first, then this finds nothing to do."""
    with _told_lock:
        if _told is None:
            _untold.append(path)  # the watchdog is still starting (in its thread)
        else:
            _tell(path)


def _tell(path: str) -> None:
    with contextlib.suppress(OSError):
        os.write(_told, f"rmdir {path}\n".encode())  # type: ignore[arg-type]


def on_terminate(callback: Callable[[int], None] | None) -> None:
    """Who ends kep gracefully on SIGTERM (the TUI), after its children are gone."""
    global _on_terminate
    _on_terminate = callback


def marked_pids(tok: str | None = None) -> list[int]:
    """Live processes carrying `tok` (default: this kep's) in their KEP_OWNER."""
    tok = tok or _token
    if not tok:
        return []
    me, found = os.getpid(), []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            env = Path(entry.path, "environ").read_bytes()
        except OSError:
            continue
        for item in env.split(b"\0"):
            if item.startswith(b"KEP_OWNER=") and tok.encode() in item[10:].split(b" "):
                found.append(int(entry.name))
                break
    return found


def descendants(root: int) -> list[int]:
    """Every live process below `root` by parent links, read from /proc at once (before any
    kill orphans them). Finds what stripped its KEP_OWNER mark and left its group."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_bytes()
            ppid = int(stat.rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def kill_descendants() -> None:
    """Kill every live tool group, then every process marked with this kep's token or below
    kep in the process tree (the tree is read first: the group kill orphans its escapees)."""
    from tuiapp.tools.proc import kill_all_groups

    below = descendants(os.getpid()) if sys.platform.startswith("linux") else []
    kill_all_groups()
    reaper = _reaper.pid if _reaper is not None else None
    for pid in dict.fromkeys([*below, *marked_pids()]):
        if pid != reaper:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _terminate(sig: int, frame: object) -> None:
    kill_descendants()
    if sig == signal.SIGTERM and _on_terminate is not None:
        callback, _ = _on_terminate, on_terminate(None)
        callback(sig)
        return
    release()
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)


def release() -> None:
    """What kep holds outside itself, given back before an end that skips atexit (a signal,
    os._exit): the network proxy's holder and its socket folder in $TMPDIR."""
    from tuiapp.security.sandbox import spawn

    with contextlib.suppress(Exception):  # ending anyway: never a traceback on the way out
        spawn.stop_network()
