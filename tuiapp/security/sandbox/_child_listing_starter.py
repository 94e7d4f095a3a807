"""The call starter's listing mode: the second part of _child_starter.py's program (starters.py
joins them; the names not defined here are that file's).

A discovery lists every tool at once (`--list-functions` and kin): dozens of short processes,
CPU-bound on a small machine. A fork of this Python per lister (a spare) cost ~2.5 ms of CPU
more than a plain exec; here each lister is started from a thread of its own by posix_spawn (a
vfork: nothing of this process is copied), in what the thread makes for it first:
  its own PID namespace (the lister is its pid 1: when it ends, everything it started ends),
  its own mount namespace with a fresh private /tmp (carried mounts as in a spare), its own IPC
  namespace, its own Landlock domain (no ptrace, no signal, no abstract socket out of it), every
  capability dropped; no_new_privs, the seccomp filter and an empty bounding set come from this
  starter, which took them on once at its start, and so do the user's own ids.
What listers share with each other: this starter's PID namespace's /proc, mounted here with
hidepid=ptraceable (Linux 5.8), where Landlock leaves each lister only its own processes to
see. (A call's spare mounts a /proc of its own PID namespace; a lister cannot have one: a /proc
is made by a process inside the namespace, and the lister's first act in it is its exec.)
Without Landlock, or that /proc, listers go through spares like calls.
"""

import _signal
import _socket
import _struct
import _thread
import ctypes
import gc
import os
import select
import sys

LANDLOCK_CREATE, LANDLOCK_RESTRICT = 444, 446  # (every machine kep has a filter for)
ACCESS_MAKE_BLOCK = 1 << 11  # handled with no rule: refused (a domain needs one right)
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1, 2  # Landlock ABI 6
PR_CAP_AMBIENT_CLEAR_ALL = 4
POSIX_DUP2 = os.POSIX_SPAWN_DUP2


def landlock_ruleset():
    """A ruleset each lister's thread makes its own domain from; None without Landlock."""
    abi = libc.syscall(LANDLOCK_CREATE, None, 0, 1)  # LANDLOCK_CREATE_RULESET_VERSION
    if abi < 1:
        return None
    fields = [ACCESS_MAKE_BLOCK]
    if abi >= 4:
        fields.append(0)  # handled_access_net
    if abi >= 6:
        fields.append(SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL)
    attr = ctypes.create_string_buffer(_struct.pack(f"{len(fields)}Q", *fields))
    fd = libc.syscall(LANDLOCK_CREATE, attr, len(attr.raw), 0)
    return fd if fd >= 0 else None


def find_program(name, env):
    """execvpe's search, with the call's PATH (posix_spawnp would use this process's)."""
    if b"/" in name:
        return name
    for folder in env.get(b"PATH", b"/usr/local/bin:/usr/bin:/bin").split(b":"):
        path = (folder or b".") + b"/" + name
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    raise OSError(2, os.strerror(2))


class NoListingMode(OSError):
    """This kernel mounts no /proc that shows a lister only its own (before Linux 5.8)."""


class ListingStarter(Starter):
    def __init__(self, sock, uid, gid, ruleset):
        check(libc.unshare(CLONE_NEWNS), "unshare")
        if read_mounts()[1]:
            check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount")
        if libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      b"hidepid=ptraceable") != 0:  # (nothing taken on yet: a Starter will do)
            raise NoListingMode(ctypes.get_errno(), "no hidepid=ptraceable")
        Starter.__init__(self, sock, uid, gid)
        self.ruleset = ruleset
        self.devnull = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
        for p in self.covers:
            self.bind(p, p, read_only=True)
        if uid is not None:  # (as root, Starter's start took these on already)
            self.map_user()
            self.limit()

    def serve(self):
        """Say whether a lister's walls can be made here (one made for nothing), then start
        listers until kep goes."""
        made = self.in_thread(self.lister_walls, b"")
        if isinstance(made, OSError):
            self.send(b"refused", str(made).encode())
            return
        self.send(b"ready")
        kep = self.sock.fileno()
        while True:
            for fd, _ in self.poll.poll():
                if fd == kep:
                    if not self.request():
                        return
                elif fd in self.calls:
                    self.reap(fd)

    def in_thread(self, work, *args):
        """work(*args) in a new thread, waited for: what it takes on (namespaces, a domain,
        dropped capabilities, a working folder) stays with it and with what it starts."""
        done, out = _thread.allocate_lock(), []
        done.acquire()

        def thread():
            try:
                out.append(work(*args))
            except BaseException as e:
                out.append(e if isinstance(e, OSError) else OSError(1, repr(e)))
            finally:
                done.release()

        _thread.start_new_thread(thread, ())
        done.acquire()
        return out[0]

    def hand_over(self, msg, fds):
        fields = msg.split(b"\0")
        got = self.in_thread(self.start_lister, fields, fds)  # a pid, why not, or an OSError
        if isinstance(got, bytes):  # as a spare's call: why, on its stderr, and a failed run
            os.write(fds[1], got)
            try:
                got = os.fork()  # (here: the thread's PID namespace died with its exec)
            except OSError as e:
                got = e
            if got == 0:
                os._exit(127)
        if isinstance(got, OSError):  # no process to be had: kep says so
            self.send(b"failed", fields[0], b"%d" % (got.errno or 11))
            return
        pidfd = os.pidfd_open(got)
        self.calls[pidfd] = (fields[0], got)
        self.poll.register(pidfd, select.EPOLLIN)
        self.send(b"started", fields[0], fds=[pidfd])

    def lister_walls(self, cwd):
        check(libc.unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWPID), "unshare")
        self.fresh_tmp()
        if cwd:
            os.chdir(cwd)
        check(libc.syscall(LANDLOCK_RESTRICT, self.ruleset, 0), "landlock")
        check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "ambient")
        check(libc.capset(self.cap_header, self.cap_data), "capset")

    def start_lister(self, fields, fds):
        """In a thread of its own: the lister's walls, then its start; or why it cannot."""
        cwd, argc = fields[1], int(fields[2])
        argv = fields[3:3 + argc]
        env = dict(item.split(b"=", 1) for item in fields[3 + argc:] if b"=" in item)
        stdin = fds[2] if len(fds) > 2 else self.devnull
        name = argv[0] if argv else b"?"
        try:
            self.lister_walls(cwd)
            return os.posix_spawn(find_program(name, env), argv, env, setsid=True,
                                  file_actions=[(POSIX_DUP2, stdin, 0), (POSIX_DUP2, fds[0], 1),
                                                (POSIX_DUP2, fds[1], 2)],
                                  setsigdef=IGNORED_BY_PYTHON, setsigmask=())
        except OSError as e:
            why = str(e.strerror or e)
            if isinstance(e, Failed):
                why += f" (the sandbox's {e.stage})"
            return b"kep: sandbox: cannot run %s: %s\n" % (name, why.encode("utf-8", "replace"))


def main():
    sock = _socket.socket(fileno=os.dup(0))
    os.dup2(os.open("/dev/null", os.O_RDONLY), 0)  # the socket lives on another number
    if not hasattr(os, "pidfd_open") or not sys.argv[3]:
        sock.sendmsg([b"refused\0no call starter for this platform"])
        return
    uid, gid = (None, None) if sys.argv[1] == "-" else (int(sys.argv[1]), int(sys.argv[2]))
    ruleset = landlock_ruleset() if sys.argv[4:5] == ["listing"] else None
    try:
        try:
            if ruleset is None:
                raise NoListingMode(0, "no Landlock")
            starter = ListingStarter(sock, uid, gid, ruleset)
        except NoListingMode:  # listers are started as calls are
            starter = Starter(sock, uid, gid)
    except OSError as e:
        sock.sendmsg([b"refused\0" + str(e).encode()])
        return
    _signal.signal(_signal.SIGPIPE, _signal.SIG_IGN)
    # No collector: what it would touch in each forked spare is memory copied for nothing.
    gc.disable()
    gc.freeze()
    libc.malloc_trim(0)  # (the heap left by start-up: each spare would copy its page tables)
    try:
        starter.serve()
    except (BrokenPipeError, ConnectionError):
        pass


main()
sys.exit(0)
