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
    peer = {}
    os.write(1, b"ready\n")
    while True:
        for key, _ in sel.select():
            s = key.fileobj
            if s is lo:
                try:
                    c, _ = lo.accept()
                except OSError:
                    continue
                u = socket.socket(socket.AF_UNIX)
                try:
                    u.connect(path)
                except OSError:
                    c.close()
                    u.close()
                    continue
                for a, b in ((c, u), (u, c)):
                    a.setblocking(True)
                    peer[a] = b
                    sel.register(a, selectors.EVENT_READ, None)
                continue
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            other = peer.get(s)
            if data and other is not None:
                try:
                    other.sendall(data)
                    continue
                except OSError:
                    pass
            for x in (s, other):
                if x is not None and x in peer:
                    sel.unregister(x)
                    peer.pop(x, None)
                    x.close()


if __name__ == "__main__":
    main()
