"""The network bridge inside the sandbox carries every connection on its own: a connection
whose client does not read (a big download it is slow to take) must not hold up another
one. Run in a network namespace of its own, as kep's holder runs it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tuiapp.security.sandbox import bridge

UNSHARE = shutil.which("unshare")

SCRIPT = textwrap.dedent('''
    import os, selectors, socket, sys, tempfile, threading, time
    spec = __import__("importlib.util").util.spec_from_file_location("bridge", BRIDGE)
    bridge = __import__("importlib.util").util.module_from_spec(spec)
    spec.loader.exec_module(bridge)
    d = tempfile.mkdtemp()
    __import__("atexit").register(__import__("shutil").rmtree, d, True)  # none left in $TMPDIR
    path = os.path.join(d, "proxy.sock")
    proxy = socket.socket(socket.AF_UNIX)
    proxy.bind(path)
    proxy.listen(16)

    def fake_proxy():  # "big": 32 MB its client never reads; anything else: echoed
        while True:
            c, _ = proxy.accept()
            def one(c=c):
                first = c.recv(16)
                if first.startswith(b"big"):
                    try:
                        c.sendall(b"x" * (32 << 20))
                    except OSError:
                        pass
                else:
                    c.sendall(first)
                    while data := c.recv(65536):
                        c.sendall(data)
            threading.Thread(target=one, daemon=True).start()

    threading.Thread(target=fake_proxy, daemon=True).start()
    bridge.loopback_up()
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    sys.argv = ["bridge", str(port), path]
    threading.Thread(target=bridge.main, daemon=True).start()
    time.sleep(0.5)
    hog = socket.create_connection(("127.0.0.1", port))
    hog.sendall(b"big")  # and never reads
    time.sleep(0.5)
    for i in range(20):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"ping%d" % i)
        got = s.recv(100)
        assert got == b"ping%d" % i, got
        s.close()
    print("OK")
''')


@pytest.mark.skipif(UNSHARE is None or subprocess.run(
    [UNSHARE or "unshare", "--user", "--map-root-user", "--net", "true"],
    capture_output=True, check=False).returncode != 0, reason="no user namespaces here")
def test_a_client_that_does_not_read_holds_up_no_other_connection(tmp_path: Path) -> None:
    script = tmp_path / "t.py"
    script.write_text(f"BRIDGE = {str(Path(bridge.__file__))!r}\n" + SCRIPT)
    done = subprocess.run([UNSHARE or "unshare", "--user", "--map-root-user", "--net",
                           sys.executable, "-I", str(script)], capture_output=True,
                          timeout=60, check=False)
    assert done.stdout.split()[-1:] == [b"OK"], done.stderr.decode()[-2000:]
