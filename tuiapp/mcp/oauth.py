"""OAuth 2.1 for HTTP MCP servers, as the MCP authorization spec says, through the SDK's
`OAuthClientProvider` (protected resource metadata and authorization server metadata
discovery, dynamic client registration, PKCE, state, refresh). kep adds:

- where tokens live (oauth_store: the user's data folder, 0600, registered as secrets);
- the loopback redirect receiver for `kep mcp login NAME` (127.0.0.1, a free port, one
  request, bounded), which refuses a redirect with another state or with an `error`;
- a refusal of any authorization server (metadata, registration, token, authorize URLs) that
  is neither https nor on this machine: a token or a code must not cross a network in clear;
- for connections made without a login at hand (chat start, `kep call`): the stored tokens,
  refreshed when they expire, and, when the server wants a (new) login, one line naming the
  command to run instead of a browser.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from tuiapp.mcp.oauth_store import TokenStore
from tuiapp.mcp.startup import StartRefused
from tuiapp.security import secrets
from tuiapp.security.logfile import LogHandler
from tuiapp.settings import paths

LOGIN_TIMEOUT = 300.0  # seconds the loopback receiver waits for the browser
REQUEST_CAP = 16 * 1024
PAGE = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nConnection: close\r\n"
        b"\r\n<!doctype html><title>kep</title><p>%s You can close this tab.</p>")


class LoginNeeded(StartRefused):
    """The server wants a login kep cannot do here; the message names the command."""


def quiet_sdk_logging() -> None:
    """`kep mcp login` runs the SDK outside a chat: its log (a failed flow's traceback) goes
    to kep's filtered, capped log file, not to the terminal."""
    logger = logging.getLogger("mcp")
    if not any(isinstance(h, LogHandler) for h in logger.handlers):
        handler = LogHandler(paths.data_dir() / "logs" / "mcp-sdk.log", secrets.active)
        handler.setLevel(logging.WARNING)
        logger.addHandler(handler)
    logger.propagate = False


def login_hint(name: str) -> str:
    return f"it needs an OAuth login: run `kep mcp login {name}`"


def is_safe_url(url: str) -> bool:
    """https, or http to this machine (a loopback authorization server, as in development)."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        return True
    if parts.scheme != "http":
        return False
    host = (parts.hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def require_safe(url: str) -> None:
    if not is_safe_url(url):
        shown = f"{urlsplit(url).scheme}://{urlsplit(url).netloc}"
        raise OAuthFlowError(f"refused authorization server {shown}: it is not https, so a "
                             "code or token would cross the network in clear text")


class KepOAuth(OAuthClientProvider):
    """The SDK's provider, with kep's token store and URL checks."""

    def __init__(self, name: str, url: str, *, redirect_uri: str,
                 redirect_handler: Callable[[str], Awaitable[None]],
                 callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]]) -> None:
        self.store = TokenStore(name, url)
        metadata = OAuthClientMetadata(
            client_name="kep", redirect_uris=[redirect_uri],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"], response_types=["code"],
            token_endpoint_auth_method="none")

        async def checked_redirect(authorization_url: str) -> None:
            require_safe(authorization_url)
            await redirect_handler(authorization_url)

        super().__init__(url, metadata, self.store, checked_redirect, callback_handler)

    async def _initialize(self) -> None:
        await super()._initialize()
        # The SDK forgets a stored token's expiry; without it an expired token would meet a
        # 401 (a new login) instead of a refresh.
        self.context.token_expiry_time = self.store.expires_at()

    async def _auth_flow(self, request: Any) -> AsyncGenerator[Any, Any]:
        flow = super()._auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                if outgoing is not request:  # discovery, registration, token: check first
                    require_safe(str(outgoing.url))
                response = yield outgoing
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()


def stored_auth(name: str, url: str) -> KepOAuth | None:
    """For a connection made without a person at hand: the provider when a login is stored
    (it refreshes; a server wanting a new login fails with LoginNeeded), else None."""
    if not TokenStore(name, url).has_tokens():
        return None

    async def no_browser(_: str) -> None:
        raise LoginNeeded(login_hint(name))

    async def no_callback() -> AuthorizationCodeResult:
        raise LoginNeeded(login_hint(name))

    return KepOAuth(name, url, redirect_uri="http://127.0.0.1/callback",
                    redirect_handler=no_browser, callback_handler=no_callback)


class LoopbackReceiver:
    """Receives the authorization server's redirect on 127.0.0.1 (one request)."""

    def __init__(self) -> None:
        self._result: asyncio.Future[AuthorizationCodeResult] | None = None
        self._server: asyncio.AbstractServer | None = None
        self.port = 0

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    async def start(self) -> None:
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0,
                                                  limit=REQUEST_CAP)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()

    async def wait(self) -> AuthorizationCodeResult:
        assert self._result is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self._result), LOGIN_TIMEOUT)
        except TimeoutError:
            raise OAuthFlowError(f"no answer from the browser within {LOGIN_TIMEOUT:g}s") \
                from None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 10)
        except (TimeoutError, ValueError, ConnectionError):  # ValueError: over REQUEST_CAP
            writer.close()
            return
        parts = line.decode("latin-1").split()
        target = urlsplit(parts[1]) if len(parts) >= 2 and parts[0] == "GET" else None
        if target is None or target.path != "/callback":
            writer.write(b"HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n")
            await _close(writer)
            return
        query = {k: v[0] for k, v in parse_qs(target.query, max_num_fields=20).items()}
        assert self._result is not None
        if "error" in query:
            message = b"kep was not authorized."
            if not self._result.done():
                why = query["error"][:100]
                detail = query.get("error_description", "")[:200]
                self._result.set_exception(OAuthFlowError(
                    f"the authorization server said {why!r}" + (f": {detail}" if detail else "")))
        else:
            message = b"kep is logged in."
            if not self._result.done():
                self._result.set_result(AuthorizationCodeResult(
                    code=query.get("code", ""), state=query.get("state"), iss=query.get("iss")))
        writer.write(PAGE % message)
        await _close(writer)


async def _close(writer: asyncio.StreamWriter) -> None:
    try:
        await writer.drain()
    except ConnectionError:
        pass
    writer.close()


async def login(name: str, url: str, show_url: Callable[[str], None]) -> None:
    """The whole flow for `kep mcp login NAME`: a fresh registration, the browser (the user, or
    a test, follows the printed URL), the redirect on loopback, the tokens stored. Raises
    OAuthFlowError (and the SDK's other OAuth errors) with what went wrong."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    receiver = LoopbackReceiver()
    await receiver.start()

    async def redirect(authorization_url: str) -> None:
        show_url(authorization_url)

    provider = KepOAuth(name, url, redirect_uri=receiver.redirect_uri,
                        redirect_handler=redirect, callback_handler=receiver.wait)
    provider.store.forget()  # a new login registers anew (the redirect port is new)
    try:
        http = create_mcp_http_client(auth=provider)
        async with Client(streamable_http_client(url, http_client=http), cache=None) as client:
            await client.list_tools()
    finally:
        await receiver.close()
    if not provider.store.has_tokens():
        raise OAuthFlowError("the server let kep in without a login; nothing was stored")
