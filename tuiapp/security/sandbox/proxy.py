"""kep's network proxy: the only way out of the sandbox's network namespace.

Sandboxed children get HTTP_PROXY/HTTPS_PROXY = http://TOKEN:x@127.0.0.1:PORT; the bridge
(bridge.py, inside the namespace) carries each connection here, over a Unix socket. The
token names the call (clients send it as Proxy-Authorization), so the tool's own `network`
setting decides: "on" anything, a host list those hosts, "ask" and hosts outside a list are
asked about (`asker`; none: refused), "off" nothing. HTTP `CONNECT` (HTTPS) and plain
`http://` requests are served; every host reached is recorded for the call's pane."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import secrets as random_tokens
import tempfile
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from tuiapp.security.sandbox import temp_folders

HEAD_MAX = 64 << 10
TOKENS_KEPT = 4096

# (tool, host, port) → an answer (netask: True / "once", "session", "always", False / "deny").
# The UI or `kep run` sets it; None refuses.
Asker = Callable[[str, str, int], Awaitable[bool | str]]


@dataclass
class CallNet:
    tool: str
    network: str | tuple[str, ...]
    reached: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def host_allowed(rules: tuple[str, ...], host: str, port: int) -> bool:
    host = host.lower().strip("[]")
    for rule in rules:
        h, _, p = rule.rpartition(":") if not rule.startswith("[") or "]:" in rule else ("", "", "")
        if not h or not p.isdigit():
            h, p = rule, ""
        h = h.strip("[]").lower()
        if (h == host or (h.startswith("*.") and host.endswith(h[1:]))) and (
                not p or int(p) == port):
            return True
    return False


# A Unix socket's path holds at most 107 bytes: a deep $TMPDIR would leave tools no network.
SOCKET_PATH_MAX = 107
_SOCKET_TAIL = len("/kep-net-xxxxxxxx/proxy.sock")


def socket_parent() -> str:
    """$TMPDIR, or /tmp when the socket's path would be too long there."""
    base = tempfile.gettempdir()
    if len(os.fsencode(base)) + _SOCKET_TAIL <= SOCKET_PATH_MAX or not os.access("/tmp", os.W_OK):
        return base
    return "/tmp"


class Proxy:
    def __init__(self) -> None:
        self.calls: OrderedDict[str, CallNet] = OrderedDict()
        self.asker: Asker | None = None
        # tool → profile entries ("host:port", "host") said yes (or no) to for the session
        self.session_allowed: dict[str, set[str]] = {}
        self.session_refused: dict[str, set[str]] = {}
        self.asking: dict[tuple[str, str, int], asyncio.Future[bool]] = {}  # open questions
        self.dir = tempfile.mkdtemp(prefix="kep-net-", dir=socket_parent())
        temp_folders.made(self.dir)  # removed by kep's watchdog if kep is killed
        self.path = os.path.join(self.dir, "proxy.sock")
        self.server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        if self.server is None:
            self.server = await asyncio.start_unix_server(self._serve, self.path)
            os.chmod(self.path, 0o600)

    def register(self, tool: str, network: str | tuple[str, ...]) -> str:
        from tuiapp.security.sandbox import netask

        token = random_tokens.token_hex(12)
        self.calls[token] = CallNet(tool, network)
        netask.note(self.calls[token])  # the running call's record, for its pane
        while len(self.calls) > TOKENS_KEPT:
            self.calls.popitem(last=False)
        return token

    async def _decide(self, call: CallNet | None, host: str, port: int) -> bool:
        if call is None:
            return False
        net = call.network
        if net == "on":
            return True
        if net == "off":
            return False
        if isinstance(net, tuple) and host_allowed(net, host, port):
            return True
        if host_allowed(tuple(self.session_allowed.get(call.tool, ())), host, port):
            return True
        if host_allowed(tuple(self.session_refused.get(call.tool, ())), host, port):
            return False
        if self.asker is None:
            return False
        key = (call.tool, host, port)
        if key in self.asking:  # the same question is open: its answer is this one's too
            return await asyncio.shield(self.asking[key])
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.asking[key] = future
        ok = False
        try:
            ok = await self._ask(call.tool, host, port)
        finally:
            del self.asking[key]
            future.set_result(ok)  # (the asker failing, or this connection gone: refused)
        return ok

    async def _ask(self, tool: str, host: str, port: int) -> bool:
        """The asker's answer, held for at most netask.ASK_SECONDS (no answer: refused);
        a session answer is kept here, before the connection goes on."""
        from tuiapp.security.sandbox import netask

        assert self.asker is not None
        try:
            answer = netask.normal(await asyncio.wait_for(self.asker(tool, host, port),
                                                          netask.ASK_SECONDS))
        except TimeoutError:
            answer = "deny"
        if answer in ("session", "always"):
            self.allow(tool, netask.entry(host, port))
        return answer != "deny"

    def allow(self, tool: str, entry: str) -> None:
        """`tool` may reach `entry` ("host:port" or "host") for the rest of the session."""
        self.session_allowed.setdefault(tool, set()).add(entry)

    def refuse(self, tool: str, entry: str) -> None:
        """`tool` is refused `entry` for the rest of the session, without asking."""
        self.session_refused.setdefault(tool, set()).add(entry)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, OSError):
            writer.close()
            return
        if len(head) > HEAD_MAX:
            return await _refuse(writer, 431, "request head too large")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            return await _refuse(writer, 400, "bad request")
        method, target, version = parts
        token = _token(lines[1:])
        call = self.calls.get(token) if token else None
        if method == "CONNECT":
            host, _, port_text = target.rpartition(":")
            rest = b""
        else:
            if not target.startswith("http://"):
                return await _refuse(writer, 400, "only http:// URLs and CONNECT")
            hostport, _, path = target[7:].partition("/")
            host, _, port_text = hostport.rpartition(":") if ":" in hostport.strip("[]").split(
                "]")[-1] else (hostport, "", "80")
            kept = [ln for ln in lines[1:] if ln and not ln.lower().startswith(
                ("proxy-authorization:", "proxy-connection:"))]
            rest = (f"{method} /{path} {version}\r\n" + "\r\n".join(kept) + "\r\n\r\n").encode(
                "latin-1")
        host = host.strip("[]")
        if not host or not port_text.isdigit():
            return await _refuse(writer, 400, "bad host")
        port = int(port_text)
        where = f"{host}:{port}"
        if not await self._decide(call, host, port):
            if call is not None:
                call.refused.append(where)
            return await _refuse(writer, 403, f"sandbox: network to {where} denied")
        try:
            up_r, up_w = await asyncio.wait_for(asyncio.open_connection(host, port), 30)
        except (OSError, TimeoutError) as e:
            return await _refuse(writer, 502, f"cannot reach {where}: {e}")
        assert call is not None
        call.reached.append(where)
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            up_w.write(rest)
        await asyncio.gather(_pipe(reader, up_w), _pipe(up_r, writer))

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
        self.remove_socket()

    def remove_socket(self) -> None:
        """The socket and its private folder in $TMPDIR (each proxy makes one)."""
        for remove, path in ((os.unlink, self.path), (os.rmdir, self.dir)):
            with contextlib.suppress(OSError):
                remove(path)


def _token(headers: list[str]) -> str | None:
    for line in headers:
        name, _, value = line.partition(":")
        if name.strip().lower() == "proxy-authorization":
            kind, _, cred = value.strip().partition(" ")
            if kind.lower() == "basic":
                with contextlib.suppress(ValueError):
                    return base64.b64decode(cred).decode("latin-1").partition(":")[0]
    return None


async def _refuse(writer: asyncio.StreamWriter, code: int, why: str) -> None:
    body = (why + "\n").encode()
    with contextlib.suppress(OSError):
        writer.write(f"HTTP/1.1 {code} {why}\r\nContent-Length: {len(body)}\r\n"
                     "Connection: close\r\n\r\n".encode("latin-1", "replace") + body)
        await writer.drain()
    writer.close()


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    try:
        while data := await src.read(65536):
            dst.write(data)
            await dst.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.close()
