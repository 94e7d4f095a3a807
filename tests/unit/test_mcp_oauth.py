"""OAuth 2.1 for HTTP MCP servers: `kep mcp login NAME` against a local authorization server
built from the mcp SDK's server-side auth pieces (tests/fakes/mcp_oauth_server.py); the test
plays the browser by following the printed authorization URL. Then the stored tokens open
the server (and are refreshed), `logout` forgets them, and every way a login can go wrong is
one line and stores no token."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from conftest import KEP, kep_env

# End to end through real kep processes and MCP servers: run by `.ci/run` (-m slow).
pytestmark = pytest.mark.slow

FAKE = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_oauth_server.py")


class AuthServer:
    def __init__(self, proc: subprocess.Popen[str], port: int) -> None:
        self.proc, self.port = proc, port
        self.url = f"http://127.0.0.1:{port}/mcp"

    def stats(self) -> dict[str, int]:
        return httpx2.get(f"http://127.0.0.1:{self.port}/stats", timeout=10).json()


def _start(mode: str = "ok", ttl: int = 3600) -> AuthServer:
    proc = subprocess.Popen([sys.executable, FAKE, "--mode", mode, "--ttl", str(ttl)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("PORT "), line
    return AuthServer(proc, int(line.split()[1]))


@pytest.fixture
def auth_server(request: pytest.FixtureRequest) -> Iterator[AuthServer]:
    mode, ttl = getattr(request, "param", ("ok", 3600))
    server = _start(mode, ttl)
    yield server
    server.proc.terminate()
    server.proc.wait(10)


@pytest.fixture
def secured(project: Path, auth_server: AuthServer) -> Path:
    (project / "mcp.json").write_text(json.dumps({"mcpServers": {"secure": {
        "url": auth_server.url}}}))
    (project / "kep.toml").write_text('[tools]\nbuiltins = false\n')
    return project


def _token_files() -> list[Path]:
    folder = Path(os.environ["KEP_DATA_DIR"]) / "mcp-auth"
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def _stored_tokens() -> list[dict[str, object]]:
    return [json.loads(p.read_text()).get("tokens") or {} for p in _token_files()]


def login(root: Path, name: str = "secure", *, browse: bool = True
          ) -> tuple[int, str, str]:
    """Run `kep mcp login`; follow the URL it prints as a browser would."""
    proc = subprocess.Popen([*KEP, "mcp", "login", name, "--project", str(root)],
                            env=kep_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    out = ""
    while browse:
        line = proc.stdout.readline()  # kep prints the URL at once, or exits (EOF)
        out += line
        if not line:
            break
        if line.startswith("http"):
            # The browser: the authorization server answers with a redirect to kep's loopback
            # receiver, which the browser follows.
            with httpx2.Client(follow_redirects=True, timeout=30) as browser:
                browser.get(line.strip())
            break
    rest_out, err = proc.communicate(timeout=60)
    return proc.returncode, out + rest_out, err


def functions(root: Path) -> str:
    done = subprocess.run([*KEP, "functions", "--project", str(root)], env=kep_env(),
                          capture_output=True, text=True, timeout=120)
    return done.stdout + done.stderr


def test_login_discovers_registers_and_stores_tokens_privately(secured: Path,
                                                               auth_server: AuthServer) -> None:
    code, out, err = login(secured)
    assert code == 0, err
    assert "logged in" in out
    assert auth_server.stats()["registered"] == 1  # dynamic client registration
    assert auth_server.stats()["authorization_code"] == 1  # PKCE code exchange
    files = _token_files()
    assert len(files) == 1
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(files[0].parent.stat().st_mode) == 0o700
    tokens = _stored_tokens()[0]
    access = str(tokens["access_token"])
    # Never on the screen, never in the project.
    assert access not in out + err and str(tokens["refresh_token"]) not in out + err
    for path in secured.rglob("*"):
        if path.is_file():
            assert access not in path.read_text(errors="replace")
    # The stored login opens the server for a later kep (headless here).
    listing = functions(secured)
    assert "whoami" in listing and access not in listing


@pytest.mark.parametrize("auth_server", [("ok", 8)], indirect=True)
def test_an_expired_token_is_refreshed_not_logged_in_again(secured: Path,
                                                           auth_server: AuthServer) -> None:
    code, _, err = login(secured)
    assert code == 0, err
    first = _stored_tokens()[0]["access_token"]
    time.sleep(9)  # the access token expires
    assert "whoami" in functions(secured)
    assert auth_server.stats()["refresh_token"] == 1
    assert auth_server.stats()["authorization_code"] == 1
    assert _stored_tokens()[0]["access_token"] != first


def test_without_a_login_headless_names_the_command(secured: Path) -> None:
    listing = functions(secured)
    assert "kep mcp login secure" in listing and "whoami" not in listing


def test_logout_forgets_the_tokens(secured: Path) -> None:
    assert login(secured)[0] == 0
    assert _token_files()
    done = subprocess.run([*KEP, "mcp", "logout", "secure", "--project", str(secured)],
                          env=kep_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "logged out" in done.stdout
    assert not _token_files()
    assert "kep mcp login secure" in functions(secured)


@pytest.mark.parametrize("auth_server, says", [
    (("error", 3600), "access_denied"),
    (("bad-state", 3600), "state"),
    (("garbage-token", 3600), ""),
    (("remote-as", 3600), "http://auth.example.com"),
], indirect=["auth_server"], ids=["error-redirect", "state-mismatch", "garbage-token",
                                  "plain-http-remote-as"])
def test_a_login_that_goes_wrong_is_one_line_and_stores_no_token(
        secured: Path, auth_server: AuthServer, says: str) -> None:
    code, out, err = login(secured)
    assert code == 1, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kep: login to secure failed"), err
    assert says.lower() in lines[0].lower()
    assert "Traceback" not in err
    assert not any(t.get("access_token") for t in _stored_tokens())
    if says.startswith("http://auth"):  # refused before anything was sent there
        assert "not https" in lines[0] and "open this URL" not in out


def test_login_to_an_unknown_or_stdio_server_is_one_line(secured: Path) -> None:
    for name in ("nope", "bad\x1b[31mname"):
        code, _, err = login(secured, name, browse=False)
        assert code == 2 and len(err.strip().splitlines()) == 1 and "\x1b" not in err


async def test_stored_tokens_are_secrets_of_the_filter() -> None:
    """A token kep keeps is redacted everywhere kep filters (logs, sessions, the screen)."""
    from mcp.shared.auth import OAuthToken

    from tuiapp.mcp.oauth_store import TokenStore
    from tuiapp.security import secrets

    store = TokenStore("svc", "https://mcp.example.com/mcp")
    access, refresh = "opaque-access-0123456789abcdef", "opaque-refresh-0123456789abcdef"
    await store.set_tokens(OAuthToken(access_token=access, token_type="Bearer",
                                      expires_in=60, refresh_token=refresh))
    shown = secrets.active().redact(f"a log line with {access} and {refresh}")
    assert access not in shown and refresh not in shown
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert store.path.is_relative_to(Path(os.environ["KEP_DATA_DIR"]))
    assert store.forget() and not store.path.exists() and not store.forget()
