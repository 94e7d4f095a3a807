"""The resident call starter's own program (kep's side: starters.py). It runs inside one set of
bubblewrap walls, with the capabilities of that sandbox's user namespace, and starts each call
in namespaces of its own: what a fresh bwrap did per call, for a fork instead of an exec of
bwrap (~10 ms of CPU). Stdlib only, no kep imports, and only C modules beside ctypes (every
object here is memory each fork copies): it is passed to `python -I -S -c`, followed by
_child_listing_starter.py (listing mode, and main()).

It keeps one "spare" child ready, walls already up; a call is handed to it, it execs it, and
the next spare is made once the call ends (a call waits only for its exec). A spare has:
  a PID namespace of its own (the call is its pid 1: when it ends, the kernel kills everything
  it started, a `setsid` double fork included), mount and IPC namespaces of its own, a fresh
  private /tmp (what the walls mounted under /tmp is carried over, with their own walls), a
  fresh /proc of its PID namespace with /proc/sys and its kin read-only, the user's own uid back
  (a user namespace mapping it) when kep is not root, every capability dropped (bounding set
  included), no_new_privs, and a seccomp filter that refuses a new user namespace (bwrap's
  --disable-userns: one would bring capabilities back).

Arguments: the user's uid and gid ("-" for both when kep runs as root), the seccomp filter
(seccomp_filter.py) in hex, and "calls" or "listing" (the mode). Protocol on fd 0, a
SOCK_SEQPACKET socket, one message each way, fields separated by NUL (exec allows none in its
strings), descriptors attached:
  starter -> kep  "ready" once its first spare stands, or "refused" WHY (and it exits)
  kep -> starter  ID CWD ARGC ARGV... ENV...   (CWD may be empty; ENV items are NAME=VALUE)
                  with 2 or 3 descriptors: stdout, stderr[, stdin] (no stdin: /dev/null)
  starter -> kep  "started" ID with a pidfd of the call, or "failed" ID ERRNO (no process to
                  be had); later "status" ID WAITSTATUS
A call that cannot exec says why on its stderr and exits 127, as bwrap's did.
EOF on fd 0: the starter exits, and with it (bwrap's PID namespace) every call it started.
"""

import _signal
import _socket
import _struct
import ctypes
import os
import select
import sys
import time

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID = 0x20000, 0x8000000, 0x10000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
PR_CAPBSET_DROP, PR_SET_SECCOMP, PR_CAP_AMBIENT, PR_SET_NO_NEW_PRIVS = 24, 22, 47, 38
PROC_COVERS = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus")  # as bwrap's
MAX_MESSAGE = 1 << 22
FDS_SPACE = _socket.CMSG_SPACE(4 * 3)
SOL_SOCKET, SCM_RIGHTS = _socket.SOL_SOCKET, _socket.SCM_RIGHTS
SPARE_DELAY = 0.02  # seconds
IGNORED_BY_PYTHON = (_signal.SIGPIPE, _signal.SIGXFSZ)

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                       ctypes.c_char_p]
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                       ctypes.c_ulong]


class Failed(OSError):
    def __init__(self, stage, err):
        OSError.__init__(self, err, f"{stage}: {os.strerror(err)}")
        self.stage = stage


def check(result, stage):
    if result != 0:
        raise Failed(stage, ctypes.get_errno())


def fds_of(anc):
    out = []
    for level, kind, data in anc:
        if level == SOL_SOCKET and kind == SCM_RIGHTS:
            out += _struct.unpack(f"{len(data) // 4}i", data[:len(data) - len(data) % 4])
    return out


def with_fds(fds):
    return [(SOL_SOCKET, SCM_RIGHTS, _struct.pack(f"{len(fds)}i", *fds))] if fds else []


def read_mounts():
    """(the mount points the walls put directly under /tmp, carried into each call's fresh
    /tmp with what is mounted inside them: the project root, tool folders; whether any mount
    here propagates to others)."""
    tmp_id, found = None, []
    with open("/proc/self/mountinfo", "rb") as f:
        rows = [line.split() for line in f]
    for row in rows:
        if row[4] == b"/tmp":
            tmp_id = row[0]  # the last one is on top
    for row in rows:
        if row[1] == tmp_id and row[4] != b"/tmp":
            path = row[4].decode("unicode_escape").encode("latin-1")  # \040 and kin
            if path not in found:
                found.append(path)
    shared = any(field.startswith(b"shared:") for row in rows for field in row[6:])
    return found, shared


def folders_for(carried):
    """The folders to make in a fresh /tmp, parents first, for these mount points."""
    out = []
    for path, is_dir in carried:
        parts = path.split(b"/")
        for n in range(3, len(parts) + (1 if is_dir else 0)):  # b"", b"tmp", below /tmp ...
            folder = b"/".join(parts[:n])
            if folder not in out:
                out.append(folder)
    return out


class Starter:
    def __init__(self, sock, uid, gid):
        self.sock, self.uid, self.gid = sock, uid, gid
        self.poll = select.epoll()
        self.poll.register(sock.fileno(), select.EPOLLIN)
        self.own_pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        filt = bytes.fromhex(sys.argv[3])
        self.filter_buf = ctypes.create_string_buffer(filt)
        self.fprog = ctypes.create_string_buffer(
            _struct.pack("HxxxxxxQ", len(filt) // 8, ctypes.addressof(self.filter_buf)))
        carried, self.shared = read_mounts()
        self.carried = [(p, os.path.isdir(p)) for p in carried]
        self.folders = folders_for(self.carried)
        with open("/proc/sys/kernel/cap_last_cap", "rb") as f:
            self.last_cap = int(f.read())
        self.cap_header = ctypes.create_string_buffer(_struct.pack("Ii", 0x20080522, 0))
        self.cap_data = ctypes.create_string_buffer(24)
        self.covers = [p.encode() for p in PROC_COVERS if os.path.exists(p)]
        # Resolved here, once: a first use in each forked child cost ~0.5 ms apiece.
        for name in ("mount", "unshare", "setns", "prctl", "capset"):
            getattr(libc, name)
        if uid is None:
            self.limit()
        self.calls = {}  # pidfd -> (id, pid)
        self.spare = None  # (pid, pidfd, channel): a child with its walls up, waiting for a call
        self.spare_due = None  # when to make the next one

    def send(self, *fields, fds=()):
        self.sock.sendmsg([b"\0".join(fields)], with_fds(fds))

    def serve(self):
        """Say whether the walls for a call can be made here (the first spare's word), then
        answer kep until it goes."""
        try:
            self.make_spare(probe=True)
            said = self.spare[2].recv(4096)
        except OSError as e:
            said = b"fork\0%d" % (e.errno or 0)
        if said != b"ready":
            stage, _, err = said.partition(b"\0")
            why = f"{stage.decode()}: {os.strerror(int(err or 0))}"
            self.send(b"refused", why.encode())
            return
        self.send(b"ready")
        kep = self.sock.fileno()
        while True:
            wait = -1 if self.spare_due is None else max(0, self.spare_due - time.monotonic())
            events = self.poll.poll(wait)
            for fd, _ in events:
                if fd == kep:
                    if not self.request():
                        return
                elif fd in self.calls:
                    self.reap(fd)
                    self.restock()
                elif self.spare is not None and fd == self.spare[2].fileno():
                    self.drop_spare(kill=True)  # it ended before its call
            if not events:
                self.restock()

    def make_spare(self, probe=False):
        ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        check(libc.unshare(CLONE_NEWPID), "unshare")  # for the next child only
        try:
            pid = os.fork()
            if pid == 0:
                keep = theirs.fileno()
                os.closerange(3, keep)  # kep's socket above all: its EOF says we are gone
                os.closerange(keep + 1, 1 << 20)
                self.spare_main(theirs, probe)
        finally:
            # back to our own PID namespace for children, or the next unshare would fail
            check(libc.setns(self.own_pid_ns, CLONE_NEWPID), "setns")
        theirs.close()
        self.spare = (pid, os.pidfd_open(pid), ours)
        self.poll.register(ours.fileno(), select.EPOLLIN)

    def drop_spare(self, kill):
        pid, pidfd, chan = self.spare
        self.spare = None
        self.poll.unregister(chan.fileno())
        if kill:
            chan.close()
            self.end(pid, pidfd)

    def end(self, pid, pidfd):
        try:
            _signal.pidfd_send_signal(pidfd, _signal.SIGKILL)
        except OSError:
            pass
        os.close(pidfd)
        os.waitpid(pid, 0)

    def restock(self):
        self.spare_due = None
        if self.spare is None:
            try:
                self.make_spare()
            except OSError:
                self.spare = None  # the next request tries again

    def request(self):
        # (close-on-exec: a lister's posix_spawn keeps no copy of them beyond its 0, 1, 2)
        msg, anc, _flags, _addr = self.sock.recvmsg(MAX_MESSAGE, FDS_SPACE,
                                                    _socket.MSG_CMSG_CLOEXEC)
        fds = fds_of(anc)
        if not msg:
            return False
        try:
            self.hand_over(msg, fds)
        finally:
            for fd in fds:
                os.close(fd)
        return True

    def hand_over(self, msg, fds):
        """Give the call to the spare (it execs it), tell kep, and make the next spare."""
        call_id = msg.partition(b"\0")[0]
        for _ in range(2):  # a spare that died waiting is replaced, once
            try:
                if self.spare is None:
                    self.make_spare()
            except OSError as e:  # no process to be had (a fork bomb elsewhere): kep says so
                self.send(b"failed", call_id, b"%d" % (e.errno or 11))
                return
            pid, pidfd, chan = self.spare
            self.drop_spare(kill=False)
            try:
                chan.sendmsg([msg], with_fds(fds))
                break
            except OSError:
                self.end(pid, pidfd)
            finally:
                chan.close()
        else:
            self.send(b"failed", call_id, b"11")
            return
        self.calls[pidfd] = (call_id, pid)
        self.poll.register(pidfd, select.EPOLLIN)
        self.send(b"started", call_id, fds=[pidfd])
        # The next spare is made once this call ends, or shortly after its start: a fork now
        # would take the CPU from the call and from kep, which are waiting on each other.
        self.spare_due = time.monotonic() + SPARE_DELAY

    def reap(self, pidfd):
        call_id, pid = self.calls.pop(pidfd)
        self.poll.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        self.send(b"status", call_id, b"%d" % status)

    # ---- in a spare: the walls, then one call ------------------------------------------------

    def spare_main(self, chan, probe):
        """Never returns: the spare ends in the call's exec or in _exit."""
        failed = None
        try:
            self.walls()
        except Failed as e:
            failed = (e.stage, e.errno)
        except OSError as e:
            failed = ("walls", e.errno or 1)
        except BaseException:
            failed = ("walls", 1)
        try:
            if probe:  # only the first is asked: a word left unread would reset the channel
                chan.send(b"ready" if failed is None else b"%s\0%d" % (failed[0].encode(),
                                                                        failed[1]))
            msg, anc, _flags, _addr = chan.recvmsg(MAX_MESSAGE, FDS_SPACE)
            if msg:
                self.run(msg.split(b"\0"), fds_of(anc), failed)
        finally:
            os._exit(127)

    def walls(self):
        check(libc.unshare(CLONE_NEWNS | CLONE_NEWIPC), "unshare")
        if self.shared:  # (bwrap's are not: nothing to undo, a walk of every mount saved)
            check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount")
        self.fresh_tmp()
        check(libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None),
              "proc")
        for p in self.covers:
            self.bind(p, p, read_only=True)
        if self.uid is not None:  # the user's own ids, not the starter's root, for the call
            self.map_user()
        self.drop_privileges()
        os.setsid()
        for sig in IGNORED_BY_PYTHON:  # what is ignored stays ignored across an exec
            _signal.signal(sig, _signal.SIG_DFL)

    def map_user(self):
        check(libc.unshare(CLONE_NEWUSER), "userns")
        for name, text in (("setgroups", "deny"), ("uid_map", f"{self.uid} 0 1"),
                           ("gid_map", f"{self.gid} 0 1")):
            with open("/proc/self/" + name, "w") as f:
                f.write(text)

    def run(self, fields, fds, failed):
        _, cwd, argc = fields[:3]
        argv = fields[3:3 + int(argc)]
        env = dict(item.split(b"=", 1) for item in fields[3 + int(argc):] if b"=" in item)
        stdin = fds[2] if len(fds) > 2 else os.open("/dev/null", os.O_RDONLY)
        for target, fd in ((0, stdin), (1, fds[0]), (2, fds[1])):
            os.dup2(fd, target)
        name = argv[0] if argv else b"?"
        try:
            if failed is not None:
                raise OSError(failed[1], f"{os.strerror(failed[1])} (the sandbox's {failed[0]})")
            if cwd:
                os.chdir(cwd)
            os.closerange(3, 1 << 20)
            os.execvpe(name, argv, env)
        except OSError as e:  # as bwrap did: one line on the call's stderr, and a failed run
            os.write(2, b"kep: sandbox: cannot run %s: %s\n"
                     % (name, str(e.strerror or e).encode("utf-8", "replace")))

    def fresh_tmp(self):
        held = [(path, is_dir, os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC))
                for path, is_dir in self.carried]
        check(libc.mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=1777"),
              "tmpfs")
        for folder in self.folders:
            os.mkdir(folder, 0o755)
        for path, is_dir, fd in held:
            if not is_dir:
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644))
            check(libc.mount(b"/proc/self/fd/%d" % fd, path, None, MS_BIND | MS_REC, None),
                  "carry")
            os.close(fd)

    def bind(self, src, dst, read_only):
        check(libc.mount(src, dst, None, MS_BIND | MS_REC, None), "bind")
        if read_only:
            check(libc.mount(None, dst, None,
                             MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                             None), "remount")

    def limit(self):
        """What stays true across every exec below: an empty bounding set, no_new_privs, the
        seccomp filter. Done once in the starter when calls need no user namespace of their
        own (kep runs as root), else in each spare once it has made its own."""
        for cap in range(self.last_cap + 1):
            check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "bounding set")
        check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        check(libc.prctl(PR_SET_SECCOMP, 2, ctypes.addressof(self.fprog), 0, 0), "seccomp")

    def drop_privileges(self):
        if self.uid is not None:  # a new user namespace came with a full bounding set
            self.limit()
        check(libc.prctl(PR_CAP_AMBIENT, 4, 0, 0, 0), "ambient")  # CLEAR_ALL
        check(libc.capset(self.cap_header, self.cap_data), "capset")

