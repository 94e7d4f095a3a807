"""The network bridge, run INSIDE the sandbox's shared network namespace (stdlib only, no kep
imports: `python3 -I -S bridge.py PORT SOCKET`). It listens on 127.0.0.1:PORT, the only
network a sandboxed child has, and forwards each connection, byte for byte, to kep's proxy
on a Unix socket outside. kep's proxy decides; this only carries."""

import os
import selectors
import socket
import sys


def main():
    port, path = int(sys.argv[1]), sys.argv[2]
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
