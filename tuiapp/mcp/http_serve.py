"""`kep mcp serve --http HOST:PORT`: the same server over Streamable HTTP, behind a bearer token.

Every HTTP request must carry `Authorization: Bearer TOKEN` (compared in constant time);
anything else gets 401 with a `WWW-Authenticate: Bearer` challenge and never reaches the MCP
layer. The token comes from KEP_MCP_TOKEN or is generated and printed once. A non-loopback
address is refused unless the caller allows it: the token then crosses a network in clear
text, which the user must choose knowingly.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import secrets as _random
import socket
from collections.abc import Callable, Mapping
from typing import Any

TOKEN_ENV = "KEP_MCP_TOKEN"
MIN_TOKEN_LEN = 16
MAX_HEADER_BYTES = 8192  # a longer request head is refused before anything is parsed


class AddressError(ValueError):
    """A `--http` address kep will not bind, with the one line that says why."""


def parse_address(text: str, *, allow_remote: bool) -> tuple[str, int]:
    """`HOST:PORT` (`[::1]:PORT` for IPv6) → (host, port); PORT 0 picks a free one."""
    host, sep, port_text = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port_text.isascii() or not port_text.isdigit():
        raise AddressError(f"--http wants HOST:PORT (e.g. 127.0.0.1:8765), not {text!r}")
    port = int(port_text)
    if port > 65535:
        raise AddressError(f"--http: port {port} is out of range (0-65535)")
    if not allow_remote and not is_loopback(host):
        raise AddressError(f"--http {text!r} is not a loopback address; clients on the network "
                           "could reach kep's tools: add --allow-remote to bind it anyway")
    if any(c.isspace() or ord(c) < 32 for c in host):
        raise AddressError(f"--http: bad host {host!r}")
    return host, port


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def token_from(env: Mapping[str, str]) -> tuple[str, bool]:
    """(token, generated). A token from the environment must be long enough to resist guessing."""
    given = env.get(TOKEN_ENV)
    if given is None:
        return _random.token_urlsafe(32), True
    if len(given) < MIN_TOKEN_LEN or not given.isascii() or not given.isprintable() \
            or " " in given:
        raise AddressError(f"{TOKEN_ENV} must be at least {MIN_TOKEN_LEN} printable ASCII "
                           "characters without spaces")
    return given, False


class BearerGuard:
    """ASGI wrapper: only requests with the right bearer token reach `app`."""

    def __init__(self, app: Any, token: str) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any],
                       send: Callable[..., Any]) -> None:
        if scope["type"] != "http":  # lifespan: the session manager's start and stop
            await self._app(scope, receive, send)
            return
        given = b""
        for name, value in scope.get("headers", ()):
            if name.lower() == b"authorization":
                given = value
                break
        if hmac.compare_digest(given, self._expected):
            await self._app(scope, receive, send)
            return
        body = json.dumps({"error": "invalid_token",
                           "error_description": "a valid bearer token is required"}).encode()
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"content-type", b"application/json"),
            (b"www-authenticate", b'Bearer realm="kep", error="invalid_token"'),
            (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (bound before the banner, so the port printed is the real one)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(address)
    sock.listen(128)
    sock.setblocking(False)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/mcp"


async def serve_http(mcp_server: Any, sock: socket.socket, token: str) -> None:
    """Serve `mcp_server` (an SDK lowlevel Server) on `sock` until cancelled."""
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    host = sock.getsockname()[0]
    loopback = is_loopback(host)
    # DNS-rebinding protection (Host and Origin checks) where the SDK knows the names; a
    # remote bind is reached under names kep cannot know, and the token guards it.
    security = None if loopback else TransportSecuritySettings(
        enable_dns_rebinding_protection=False)
    app = mcp_server.streamable_http_app(host="127.0.0.1" if loopback else host,
                                         transport_security=security)
    config = uvicorn.Config(BearerGuard(app, token), log_level="warning", access_log=False,
                            lifespan="on", h11_max_incomplete_event_size=MAX_HEADER_BYTES,
                            server_header=False)
    await uvicorn.Server(config).serve(sockets=[sock])
