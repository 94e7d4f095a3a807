"""An MCP server protected by OAuth 2.1, with its own authorization server, built from the mcp
SDK's server-side auth pieces: protected resource metadata, authorization server metadata,
dynamic client registration, PKCE, refresh. Consent is automatic: GET /authorize answers with
the redirect to the client's loopback callback (a test plays the browser by following it).

Prints `PORT <n>` once it listens on 127.0.0.1. `--mode` makes it misbehave:
- `ok`: as the spec says; access tokens live `--ttl` seconds (refresh tokens forever);
- `error`: the authorization redirect carries `error=access_denied`;
- `bad-state`: the redirect carries another state;
- `garbage-token`: the token endpoint answers 200 with text that is not JSON;
- `remote-as`: the protected resource metadata names http://auth.example.com as its
  authorization server (plain http, not loopback).
GET /stats gives the grants seen, as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import socket
import sys
import time
from typing import Any
from urllib.parse import urlencode

import mcp.types as types
import uvicorn
from mcp.server import Server
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    ProviderTokenVerifier,
    RefreshToken,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.context import ServerRequestContext
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

STATS: dict[str, int] = {"authorization_code": 0, "refresh_token": 0, "registered": 0}


class Provider:
    def __init__(self, mode: str, ttl: int) -> None:
        self.mode, self.ttl = mode, ttl
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        STATS["registered"] += 1
        assert client_info.client_id
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull,
                        params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300,
            client_id=client.client_id or "", code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource)
        query: dict[str, str] = {"code": code, "state": params.state or ""}
        if self.mode == "error":
            query = {"error": "access_denied", "error_description": "the user said no",
                     "state": params.state or ""}
        elif self.mode == "bad-state":
            query["state"] = "not-the-state-kep-sent"
        return f"{params.redirect_uri}?{urlencode(query)}"

    async def load_authorization_code(self, client: Any, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = "at-" + secrets.token_urlsafe(24), "rt-" + secrets.token_urlsafe(24)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + self.ttl,
                                          resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                             resource=resource)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=self.ttl,
                          refresh_token=refresh, scope=" ".join(scopes) or None)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          code: AuthorizationCode) -> OAuthToken:
        STATS["authorization_code"] += 1
        self.codes.pop(code.code, None)
        return self._issue(client.client_id or "", code.scopes, code.resource)

    async def load_refresh_token(self, client: Any, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull,
                                     refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        STATS["refresh_token"] += 1
        self.refresh.pop(refresh_token.token, None)
        return self._issue(client.client_id or "", scopes or refresh_token.scopes,
                           refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(getattr(token, "token", ""), None)


async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[types.Tool(
        name="whoami", description="Says the caller is authorized",
        input_schema={"type": "object"})])


async def call_tool(ctx: ServerRequestContext[Any], params: Any) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text="authorized")])


def build(base: str, mode: str, ttl: int) -> Any:
    provider = Provider(mode, ttl)
    srv: Server[Any] = Server("oauth-fake", on_list_tools=list_tools, on_call_tool=call_tool)

    async def stats(request: Request) -> JSONResponse:
        return JSONResponse(STATS)

    app = srv.streamable_http_app(
        auth=AuthSettings(issuer_url=base, resource_server_url=f"{base}/mcp",  # type: ignore[arg-type]
                          client_registration_options=ClientRegistrationOptions(enabled=True)),
        token_verifier=ProviderTokenVerifier(provider),  # type: ignore[arg-type]
        auth_server_provider=provider,  # type: ignore[arg-type]
        custom_starlette_routes=[Route("/stats", stats)])

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and mode == "garbage-token" and path == "/token":
            body = b"<html>this is not json {{{"
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        if scope["type"] == "http" and mode == "remote-as" \
                and path.startswith("/.well-known/oauth-protected-resource"):
            body = json.dumps({"resource": f"{base}/mcp",
                               "authorization_servers": ["http://auth.example.com/"]}).encode()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    return wrapped


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="ok",
                   choices=("ok", "error", "bad-state", "garbage-token", "remote-as"))
    p.add_argument("--ttl", type=int, default=3600)
    opts = p.parse_args()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = build(f"http://127.0.0.1:{port}", opts.mode, opts.ttl)
    print(f"PORT {port}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
