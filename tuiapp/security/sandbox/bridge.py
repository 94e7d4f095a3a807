"""The network bridge, run INSIDE the sandbox's shared network namespace (stdlib only, no kep
imports: `python3 -I -S bridge.py PORT SOCKET`). It listens on 127.0.0.1:PORT, the only
network a sandboxed child has, and forwards each connection, byte for byte, to kep's proxy
on a Unix socket outside. kep's proxy decides; this only carries."""

import os
import selectors
import socket
import sys


def loopback_up():
    """A new network namespace has its loopback down; this process is root in its own user
    namespace (unshare --map-root-user), which may raise it."""
    import fcntl
    import struct

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        req = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, req))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 0x1 | 0x40))  # UP|RUNNING
    finally:
        s.close()


def die_with_kep():
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    except Exception:
        pass


BUFFER_MAX = 1 << 20  # bytes held for a peer that is slow to read; then its source waits


class Pair:
    """One connection: the child's socket and the one to kep's proxy, each with the bytes
    waiting to be written to it and whether its reading side has ended."""

    def __init__(self, a, b):
        self.peer = {a: b, b: a}
        self.out = {a: bytearray(), b: bytearray()}
        self.eof = set()


def main():
    port, path = int(sys.argv[1]), sys.argv[2]
    die_with_kep()
    loopback_up()
    lo = socket.socket()
    lo.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lo.bind(("127.0.0.1", port))
    lo.listen(128)
    lo.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(lo, selectors.EVENT_READ, None)
    os.write(1, b"ready\n")
    serve(sel, lo, path)


def serve(sel, lo, path):
    """Every socket non-blocking, each with its own buffer: a connection whose reader is
    slow holds up only itself (its source stops being read once BUFFER_MAX is waiting)."""

    def update(pair, s):
        other = pair.peer[s]
        mask = 0
        if s not in pair.eof and len(pair.out[other]) < BUFFER_MAX:
            mask |= selectors.EVENT_READ
        if pair.out[s]:
            mask |= selectors.EVENT_WRITE
        try:
            key = sel.get_key(s)
        except (KeyError, ValueError):
            key = None
        if key is None and mask:
            sel.register(s, mask, pair)
        elif key is not None and not mask:
            sel.unregister(s)
        elif key is not None and key.events != mask:
            sel.modify(s, mask, pair)

    def close(pair):
        for x in pair.peer:
            try:
                sel.unregister(x)
            except (KeyError, ValueError):
                pass
            x.close()

    def done(pair):
        return len(pair.eof) == 2 and not any(pair.out.values())

    while True:
        for key, events in sel.select():
            s, pair = key.fileobj, key.data
            if s is lo:
                try:
                    c, _ = lo.accept()
                except OSError:
                    continue
                u = socket.socket(socket.AF_UNIX)
                try:
                    u.connect(path)  # a local socket: connects at once or fails
                except OSError:
                    c.close()
                    u.close()
                    continue
                c.setblocking(False)
                u.setblocking(False)
                new = Pair(c, u)
                update(new, c)
                update(new, u)
                continue
            other = pair.peer[s]
            try:
                if events & selectors.EVENT_WRITE and pair.out[s]:
                    n = s.send(pair.out[s])
                    del pair.out[s][:n]
                    if not pair.out[s] and other in pair.eof:
                        s.shutdown(socket.SHUT_WR)  # its source ended: pass the end on
                if events & selectors.EVENT_READ:
                    data = s.recv(65536)
                    if data:
                        pair.out[other] += data
                    else:
                        pair.eof.add(s)
                        if not pair.out[other]:
                            other.shutdown(socket.SHUT_WR)
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                close(pair)
                continue
            if done(pair):
                close(pair)
                continue
            update(pair, s)
            update(pair, other)


if __name__ == "__main__":
    main()
