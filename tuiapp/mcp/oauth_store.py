"""Where kep keeps the OAuth tokens of the HTTP MCP servers it logged in to.

One file per server in the user's data folder (`mcp-auth/NAME-HASH.json`, the hash of the
server's URL: a changed URL is a different server), mode 0600 in a 0700 folder, written
whole through a temporary file. Never in a project, and the data folder is hidden from every
tool kep runs. Every token read or written is registered with the secrets filter, so none can
reach a log, a session, the model or the screen.

It is the SDK's `TokenStorage`: the SDK's OAuth provider reads and writes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any

from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import ValidationError

from tuiapp.security import project_files, secrets
from tuiapp.settings import paths

CAP = 64 * 1024


def auth_dir() -> Path:
    return paths.data_dir() / "mcp-auth"


def token_path(name: str, url: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64] or "server"
    digest = hashlib.sha256(url.encode("utf-8", "replace")).hexdigest()[:16]
    return auth_dir() / f"{safe}-{digest}.json"


def _register(name: str, data: dict[str, Any]) -> None:
    tokens = data.get("tokens") or {}
    values = {f"MCP_OAUTH_TOKEN_{name}": tokens.get("access_token"),
              f"MCP_OAUTH_REFRESH_TOKEN_{name}": tokens.get("refresh_token"),
              f"MCP_OAUTH_CLIENT_SECRET_{name}": (data.get("client") or {}).get("client_secret")}
    secrets.note_passed({k: v for k, v in values.items() if isinstance(v, str) and v})


class TokenStore:
    """The SDK's TokenStorage, for one server."""

    def __init__(self, name: str, url: str) -> None:
        self.name, self.path = name, token_path(name, url)

    def _read(self) -> dict[str, Any]:
        try:
            raw = project_files.read_bytes(self.path, CAP)
            data = json.loads(raw) if raw else {}
        except (project_files.ProjectFileError, ValueError):
            return {}  # unreadable: as good as logged out (login writes a fresh one)
        if not isinstance(data, dict):
            return {}
        _register(self.name, data)
        return data

    def _write(self, data: dict[str, Any]) -> None:
        _register(self.name, data)
        folder = self.path.parent
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(folder, 0o700)
        tmp = folder / f".{self.path.name}.{os.getpid()}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(tmp, flags, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, json.dumps(data).encode())
        finally:
            os.close(fd)
        os.replace(tmp, self.path)

    def has_tokens(self) -> bool:
        return bool(self._read().get("tokens"))

    def forget(self) -> bool:
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True

    # ---- the SDK's TokenStorage --------------------------------------------------------------

    async def get_tokens(self) -> OAuthToken | None:
        stored = self._read().get("tokens")
        try:
            return OAuthToken.model_validate(stored) if stored else None
        except ValidationError:
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        data = self._read()
        data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        # The SDK keeps the expiry in memory only: kept here, a later kep refreshes in time.
        data["expires_at"] = (time.time() + tokens.expires_in
                              if tokens.expires_in is not None else None)
        self._write(data)

    def expires_at(self) -> float | None:
        value = self._read().get("expires_at")
        return float(value) if isinstance(value, (int, float)) else None

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        stored = self._read().get("client")
        try:
            return OAuthClientInformationFull.model_validate(stored) if stored else None
        except ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        data = self._read()
        data["client"] = client_info.model_dump(mode="json", exclude_none=True)
        self._write(data)
