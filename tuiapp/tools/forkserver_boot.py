"""The fork server's own program (see forkserver.py). Runs inside the TOOLS' interpreter, which
may be any Python 3, so: stdlib only, conservative syntax, no kep imports.

Protocol on stdin/stdout, one JSON object per line:
  kep → server  {"id": N, "path": "/abs/script", "args": [...], "cwd": "...", "timeout": S,
                 "cap": B}
  server → kep  {"ready": true} once, then per request
                {"id": N, "exit": CODE|null, "timed_out": bool, "truncated": bool,
                 "stdout": base64, "stderr": base64}
Each request runs in a forked child: new session, stdin /dev/null, stdout/stderr pipes, the
script executed as __main__ (what `#!python` + exec would do, minus the interpreter start).
EOF on stdin: every child's group is killed and the server exits.
"""

import atexit
import base64
import builtins
import gc
import json
import os
import selectors
import signal
import sys
import time
import traceback
import types

GRACE = 0.5
LINGER = 0.3
STDERR_TAIL = 64 * 1024


def run_main(path):
    """Execute the script as __main__, as `python path` would (runpy.run_path costs more)."""
    with open(path, "rb") as f:
        source = f.read()
    code = compile(source, path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


def scope_signals():
    """Put this forked call in a Landlock domain of its own that may not signal processes
    outside it (Landlock ABI 6+): not the fork server, nor another listing. Best effort."""
    try:
        import ctypes
        import struct

        libc = ctypes.CDLL(None, use_errno=True)
        nr_create, nr_restrict = 444, 446  # the same on x86_64 and aarch64
        if os.uname().machine not in ("x86_64", "aarch64"):
            return
        abi = libc.syscall(nr_create, None, 0, 1)  # LANDLOCK_CREATE_RULESET_VERSION
        if abi < 6:
            return
        # struct landlock_ruleset_attr {u64 handled_access_fs, handled_access_net, scoped}
        attr = ctypes.create_string_buffer(struct.pack("QQQ", 0, 0, 0x1 | 0x2))
        fd = libc.syscall(nr_create, attr, len(attr.raw), 0)
        if fd < 0:
            return
        if libc.prctl(38, 1, 0, 0, 0) == 0:  # PR_SET_NO_NEW_PRIVS
            libc.syscall(nr_restrict, fd, 0)
        os.close(fd)
    except Exception:
        pass


def run_child(req, out_w, err_w, close_fds):
    """In the forked child: become the script. Never returns."""
    code = 1
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        for fd in close_fds:
            try:
                os.close(fd)
            except OSError:
                pass
        os.chdir(req["cwd"])
        path = req["path"]
        sys.argv = [path, *req["args"]]
        # The server runs with -I (nothing from the project shadows its own imports); the
        # script gets the path `python script` would give it: its folder, then PYTHONPATH.
        extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[0:1] = [os.path.dirname(os.path.realpath(path)), *extra]
        scope_signals()
        try:
            run_main(path)
            code = 0
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code & 0xFF
            else:
                sys.stderr.write(str(e.code) + "\n")
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
        try:
            atexit._run_exitfuncs()
        except BaseException:
            pass
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                code = code or 120  # what CPython does when flushing stdout fails at exit
    finally:
        os._exit(code)


class Job:
    def __init__(self, req, pid, out_r, err_r):
        self.req = req
        self.pid = pid
        self.fds = {out_r: "out", err_r: "err"}
        self.out = bytearray()
        self.err = bytearray()
        self.truncated = False
        self.status = None  # exit code once reaped
        self.deadline = time.monotonic() + float(req["timeout"])
        self.timed_out = False
        self.term_at = None  # when SIGTERM was sent (timeout)
        self.exit_at = None  # when the leader was reaped with pipes still open
        self.killed = False

    def killpg(self, sig):
        try:
            os.killpg(self.pid, sig)
        except OSError:
            pass


class Server:
    def __init__(self):
        self.ctl_in = os.dup(0)
        self.ctl_out = os.dup(1)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.close(null)
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *a: None)
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.ctl_in, selectors.EVENT_READ, None)
        self.sel.register(self.wake_r, selectors.EVENT_READ, None)
        self.jobs = {}  # pid -> Job
        self.by_fd = {}  # pipe fd -> Job
        self.pending = b""
        self.closing = False

    def send(self, obj):
        data = (json.dumps(obj) + "\n").encode()
        while data:
            n = os.write(self.ctl_out, data)
            data = data[n:]

    def own_fds(self):
        return [self.ctl_in, self.ctl_out, self.wake_r, self.wake_w, *self.by_fd]

    def start(self, req):
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            self.sel.close()
            run_child(req, out_w, err_w, [*self.own_fds(), out_r, err_r, out_w, err_w])
        os.close(out_w)
        os.close(err_w)
        job = Job(req, pid, out_r, err_r)
        self.jobs[pid] = job
        for fd in (out_r, err_r):
            self.by_fd[fd] = job
            self.sel.register(fd, selectors.EVENT_READ, None)

    def close_fd(self, fd):
        job = self.by_fd.pop(fd)
        del job.fds[fd]
        self.sel.unregister(fd)
        os.close(fd)

    def on_ctl(self):
        data = os.read(self.ctl_in, 65536)
        if not data:
            self.closing = True
            return
        self.pending += data
        while b"\n" in self.pending:
            line, self.pending = self.pending.split(b"\n", 1)
            req = json.loads(line)
            try:
                self.start(req)
            except OSError as e:
                self.send({"id": req["id"], "error": str(e)})

    def on_pipe(self, fd):
        job = self.by_fd[fd]
        data = os.read(fd, 65536)
        if not data:
            self.close_fd(fd)
            return
        if job.fds[fd] == "out":
            room = int(job.req["cap"]) - len(job.out)
            if len(data) > room:
                job.truncated = True
            job.out += data[: max(room, 0)]
        else:
            job.err += data
            if len(job.err) > 2 * STDERR_TAIL:
                del job.err[: len(job.err) - STDERR_TAIL]

    def reap(self):
        for job in list(self.jobs.values()):
            if job.status is not None:
                continue
            try:
                pid, st = os.waitpid(job.pid, os.WNOHANG)
            except ChildProcessError:
                pid, st = job.pid, 0
            if pid:
                job.status = -os.WTERMSIG(st) if os.WIFSIGNALED(st) else os.WEXITSTATUS(st)
                job.exit_at = time.monotonic()

    def tick(self):
        """Timeouts, orphans holding pipes, and finished jobs."""
        now = time.monotonic()
        for job in list(self.jobs.values()):
            if job.status is None and not job.timed_out and now >= job.deadline:
                job.timed_out = True
                job.term_at = now
                job.killpg(signal.SIGTERM)
            if (
                job.timed_out
                and not job.killed
                and (job.status is not None or now >= job.term_at + GRACE)
            ):
                job.killed = True
                job.killpg(signal.SIGKILL)
            if job.status is not None and job.fds:
                # The leader is gone but something in its group holds the pipes.
                if not job.killed and now >= job.exit_at + LINGER:
                    job.killed = True
                    job.killpg(signal.SIGKILL)
                if now >= job.exit_at + 2 * LINGER:
                    for fd in list(job.fds):
                        self.close_fd(fd)
            if job.status is not None and not job.fds:
                del self.jobs[job.pid]
                self.send(
                    {
                        "id": job.req["id"],
                        "exit": None if job.timed_out else job.status,
                        "timed_out": job.timed_out,
                        "truncated": job.truncated,
                        "stdout": base64.b64encode(bytes(job.out)).decode(),
                        "stderr": base64.b64encode(bytes(job.err[-STDERR_TAIL:])).decode(),
                    }
                )

    def next_timeout(self):
        if not self.jobs:
            return None
        return 0.05  # a coarse tick while children run: deadlines and lingering pipes

    def serve(self):
        gc.freeze()  # what exists now is shared with every fork: keep gc from copying it
        self.send({"ready": True})
        while not self.closing:
            for key, _ in self.sel.select(self.next_timeout()):
                fd = key.fd
                if fd == self.ctl_in:
                    self.on_ctl()
                elif fd == self.wake_r:
                    try:
                        os.read(self.wake_r, 4096)
                    except OSError:
                        pass
                elif fd in self.by_fd:
                    self.on_pipe(fd)
            self.reap()
            self.tick()
        for job in self.jobs.values():
            job.killpg(signal.SIGKILL)


if __name__ == "__main__":
    Server().serve()
