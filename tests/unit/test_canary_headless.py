"""The canary harness, headless: the hostile checkout and MCP server of tests/fakes/canary.py
(every string field a payload) through every command that shows their text: `kep functions`
(and `--check`), `kep call` (an MCP tool, and the checkout's tool writing invalid UTF-8),
`kep trust`, `kep run` (the offline model calling both) and `kep mcp serve` (which answers).

It passes when each ends in bounded time without a traceback and its raw output bytes hold
nothing a terminal acts on: no ESC, 8-bit CSI, BEL or bidi control, no run of invisible
characters (`kep mcp serve` speaks JSON-RPC to a program, not a terminal: it must answer,
with the payloads as data). The commands run side by side: the whole costs one of them.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import threading

import pytest
from conftest import KEP, kep_env
from fakes import canary

TERMINAL_RAW = [raw.encode("utf-8", "surrogatepass") for raw in canary.RAW if raw != "\udcff"]
TERMINAL_RAW += [b"\xff", "\u2800".encode() * 8]

MCP_REQUESTS = "".join(json.dumps(m) + "\n" for m in [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "canary-client", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
])

MCP_AGAIN = (json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}})
             + "\n").encode()

COMMANDS: dict[str, list[str]] = {
    "functions untrusted": ["functions"],
    "functions": ["functions"],
    "functions --check": ["functions", "--check"],
    "call mcp": ["call", "canary_canary_form", "{}"],
    "call checkout": ["call", "canary_tool", "{}"],
    "trust": ["trust", "."],
    "run": ["run", "-y", "canary_canary_form {}; canary_tool {}"],
    "mcp serve": ["mcp", "serve"],
}
# To a pipe, `kep call` writes a tool's output byte for byte (on purpose); to a terminal, it
# goes through the display edge: those run on a pseudo-terminal, and its bytes are read.
ON_A_TERMINAL = {"call mcp", "call checkout"}


class _Terminal:
    """A pseudo-terminal for a child's stdout and stderr, read to the end in a thread."""

    def __init__(self) -> None:
        self.master, self.slave = pty.openpty()
        self.data = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the child closed its end
                return
            if not chunk:
                return
            self.data += chunk

    def bytes(self) -> bytes:
        self._reader.join(30)
        os.close(self.master)
        return bytes(self.data)


# Its module-scoped fixture is built once: the module's tests share a parallel worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("canary_headless")]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, bytes, bytes]]:
    base = tmp_path_factory.mktemp("canary")
    env = kep_env(KEP_STATE_DIR=str(base / "state"))
    root = canary.make_checkout(base / "proj")
    untrusted = subprocess.run([*KEP, "functions"], cwd=root, env=env, capture_output=True,
                               timeout=240)
    out: dict[str, tuple[int, bytes, bytes]] = {
        "functions untrusted": (untrusted.returncode, untrusted.stdout, untrusted.stderr)}
    subprocess.run([*KEP, "trust", "."], cwd=root, env=env, capture_output=True, timeout=120,
                   check=True)
    procs: dict[str, subprocess.Popen[bytes]] = {}
    terminals: dict[str, _Terminal] = {}
    for name, argv in COMMANDS.items():
        if name == "functions untrusted":
            continue
        tty = _Terminal() if name in ON_A_TERMINAL else None
        out_fd: int = subprocess.PIPE
        if tty is not None:
            terminals[name], out_fd = tty, tty.slave
        procs[name] = subprocess.Popen(
            [*KEP, *argv], cwd=root, env=env, stdout=out_fd, stderr=out_fd,
            stdin=subprocess.PIPE if name == "mcp serve" else subprocess.DEVNULL)
        if tty:
            os.close(tty.slave)
    served = procs["mcp serve"]
    assert served.stdin is not None and served.stdout is not None
    served.stdin.write(MCP_REQUESTS.encode())
    served.stdin.flush()  # (kept open until it has answered: end of input ends the server)
    answers: list[bytes] = []
    listed = threading.Event()

    def read_answers() -> None:
        # The project's tools come after the first answer (tools/list_changed): asked again.
        for line in iter(served.stdout.readline, b""):  # type: ignore[union-attr]
            answers.append(line)
            if b"tools/list_changed" in line and not listed.is_set():
                served.stdin.write(MCP_AGAIN)  # type: ignore[union-attr]
                served.stdin.flush()  # type: ignore[union-attr]
            if b'"id":3' in line.replace(b" ", b""):
                listed.set()
        listed.set()

    threading.Thread(target=read_answers, daemon=True).start()
    try:
        for name, proc in procs.items():
            if name == "mcp serve":
                listed.wait(240)
                served.stdin.close()
                served.wait(60)
                assert served.stderr is not None
                out[name] = (served.returncode, b"".join(answers), served.stderr.read())
                continue
            stdout, stderr = proc.communicate(None, timeout=240)
            if name in terminals:
                stdout, stderr = terminals[name].bytes(), b""  # (one stream on a terminal)
            out[name] = (proc.returncode, stdout, stderr)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
    assert not (root / canary.VICTIM_DIR).exists() and not (base / canary.VICTIM_DIR).exists()
    return out


@pytest.mark.parametrize("name", [n for n in COMMANDS if n != "mcp serve"])
def test_no_payload_reaches_the_terminal(results: dict[str, tuple[int, bytes, bytes]],
                                         name: str) -> None:
    code, stdout, stderr = results[name]
    assert b"Traceback" not in stderr + stdout, (stderr + stdout)[-2000:]
    assert code in (0, 1, 2), (code, stderr[-2000:])
    for stream, data in (("stdout", stdout), ("stderr", stderr)):
        for raw in TERMINAL_RAW:
            at = data.find(raw)
            assert at < 0, f"{name}: {stream} holds {raw[:8]!r}: {data[max(0, at - 80):at + 40]!r}"


def test_what_the_commands_show(results: dict[str, tuple[int, bytes, bytes]]) -> None:
    functions = results["functions"][1].decode()
    assert "canary_canary_form" in functions and "canary_tool" in functions
    assert "canary_tool" not in results["functions untrusted"][1].decode()
    trusted = results["trust"][1].decode()
    assert ")$|.*/ args ~ /^NEVER$/" in trusted  # the long rule, whole
    called = results["call checkout"][1].decode(errors="replace")
    assert "␛]52;c;Y2FuYXJ5␇" in called and "⟨U+2800 ×3000⟩; touch PWNED" in called
    assert "bad \N{REPLACEMENT CHARACTER}\N{REPLACEMENT CHARACTER} bytes" in called


def test_kep_mcp_serve_answers(results: dict[str, tuple[int, bytes, bytes]]) -> None:
    _, stdout, stderr = results["mcp serve"]
    assert b"Traceback" not in stderr, stderr[-2000:]
    replies = [json.loads(line) for line in stdout.decode().splitlines() if line.strip()]
    lists = [r for r in replies if r.get("id") in (2, 3)]
    assert lists and all("result" in r for r in lists), lists
