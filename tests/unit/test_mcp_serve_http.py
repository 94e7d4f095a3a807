"""`kep mcp serve --http`: Streamable HTTP behind a bearer token, listed and called by the mcp
SDK's own client; hostile tokens and addresses."""

from __future__ import annotations

import os
import re
import select
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from conftest import KEP, kep_env, write_tool
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

# End to end through real kep processes and MCP servers: run by `.ci/run` (-m slow).
pytestmark = pytest.mark.slow

TOOLS = r'''#!/usr/bin/env python3
import json, os, sys

if sys.argv[1] == "--list-functions":
    print(json.dumps([{"name": "leak", "description": "Print the environment's token",
                       "parameters": {"type": "object"}}]))
    sys.exit(0)
print("token seen: " + os.environ.get("KEP_MCP_TOKEN", "none"))
'''
TOKEN = "test-token-0123456789abcdefXYZ"


@pytest.fixture
def served(project: Path) -> Path:
    write_tool(project / "prompts" / "functions" / "tools", TOOLS)
    (project / "kep.toml").write_text('[tools]\nbuiltins = false\n[approval]\ndefault = "allow"\n')
    return project


class Running:
    def __init__(self, proc: subprocess.Popen[bytes], url: str, banner: str) -> None:
        self.proc, self.url, self.banner = proc, url, banner


def _start(root: Path, *extra: str, **env: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([*KEP, "mcp", "serve", "--project", str(root), *extra],
                            env=kep_env(**env), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_url(proc: subprocess.Popen[bytes]) -> tuple[str, str]:
    assert proc.stderr is not None
    seen = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 0.5)
        if ready:
            chunk = os.read(proc.stderr.fileno(), 65536)
            if not chunk:
                break
            seen += chunk
            m = re.search(rb"(http://127\.0\.0\.1:\d+/mcp)", seen)
            if m and b"token" in seen.split(m.group(1), 1)[1]:
                time.sleep(0.2)  # the token line follows the address
                return m.group(1).decode(), seen.decode()
    proc.kill()
    raise AssertionError(f"no address printed: {seen!r}")


@pytest.fixture
def running(served: Path) -> Iterator[Running]:
    proc = _start(served, "--http", "127.0.0.1:0", KEP_MCP_TOKEN=TOKEN)
    url, banner = _wait_url(proc)
    yield Running(proc, url, banner)
    proc.terminate()
    proc.wait(10)


def _client(url: str, token: str | None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return Client(streamable_http_client(url, http_client=create_mcp_http_client(headers=headers)),
                  cache=None)


async def test_sdk_client_with_the_token_lists_and_calls(running: Running) -> None:
    async with _client(running.url, TOKEN) as client:
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == ["leak"]
        result = await client.call_tool("leak", {})
        text = "".join(getattr(c, "text", "") for c in result.content)
        # The token is kept from the tools kep runs (and redacted if one found it).
        assert TOKEN not in text and "token seen: none" in text
    # The env-var token is not printed: the user already has it.
    assert TOKEN not in running.banner


@pytest.mark.parametrize("header", [None, "Bearer wrong-token-0123456789",
                                    f"Bearer {TOKEN}x", f"Basic {TOKEN}", TOKEN,
                                    "Bearer " + "A" * 2_000_000],
                         ids=["absent", "wrong", "longer", "basic", "bare", "2MB"])
async def test_requests_without_the_right_token_are_refused(running: Running,
                                                            header: str | None) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if header is not None:
        headers["Authorization"] = header
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with httpx2.AsyncClient(timeout=30) as http:
        try:
            response = await http.post(running.url, json=body, headers=headers)
        except httpx2.HTTPError:
            status = None  # the 2 MB header: the connection is refused outright
        else:
            status = response.status_code
            assert "leak" not in response.text
    assert status is None or status in (400, 401, 431)
    if status == 401:
        assert response.headers.get("www-authenticate", "").lower().startswith("bearer")
    # The server is still there for a client with the token.
    async with _client(running.url, TOKEN) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["leak"]


async def test_a_generated_token_is_printed_and_required(served: Path) -> None:
    proc = _start(served, "--http", "127.0.0.1:0")
    try:
        url, banner = _wait_url(proc)
        m = re.search(r"token: ([A-Za-z0-9_-]{32,})", banner)
        assert m, banner
        async with _client(url, m.group(1)) as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["leak"]
        async with httpx2.AsyncClient(timeout=10) as http:
            r = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                headers={"Authorization": "Bearer " + m.group(1)[:-1]})
        assert r.status_code == 401
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("address", ["0.0.0.0:0", "192.0.2.1:8080", "example.com:80"])
def test_a_non_loopback_address_needs_allow_remote(served: Path, address: str) -> None:
    proc = _start(served, "--http", address, KEP_MCP_TOKEN=TOKEN)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and "--allow-remote" in lines[0] and "Traceback" not in lines[0]


@pytest.mark.parametrize("address", ["127.0.0.1", "127.0.0.1:99999", "127.0.0.1:\tx",
                                     ":80", "127.0.0.1:8080\n"])
def test_a_bad_address_is_one_clear_line(served: Path, address: str) -> None:
    proc = _start(served, "--http", address, KEP_MCP_TOKEN=TOKEN)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    text = err.decode()
    assert "Traceback" not in text and len(text.strip().splitlines()) == 1


def test_a_short_env_token_is_refused(served: Path) -> None:
    proc = _start(served, "--http", "127.0.0.1:0", KEP_MCP_TOKEN="short")
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "KEP_MCP_TOKEN" in err.decode()


async def test_prompts_and_resources_over_http_keep_secrets_out(served: Path) -> None:
    secret = "sk-live-abcdefghijklmnop0123456789"
    (served / ".env").write_text(f"OPENAI_API_KEY={secret}\n")
    (served / "notes.txt").write_text(f"the key is {secret}\n")
    (served / "prompts" / "hello.prompt").write_text(".user Hello <<who>>\n")
    proc = _start(served, "--http", "127.0.0.1:0", "--resources", KEP_MCP_TOKEN=TOKEN)
    try:
        url, _ = _wait_url(proc)
        async with _client(url, TOKEN) as client:
            assert [p.name for p in (await client.list_prompts()).prompts] == ["hello"]
            got = await client.get_prompt("hello", {"who": secret})
            shown = "".join(getattr(m.content, "text", "") for m in got.messages)
            assert "Hello" in shown and secret not in shown  # filtered on the way out
            notes = await client.read_resource((served / "notes.txt").as_uri())
            text = "".join(getattr(c, "text", "") for c in notes.contents)
            assert "the key is" in text and secret not in text
            uris = [str(r.uri) for r in (await client.list_resources()).resources]
            assert not any(".env" in u for u in uris)
    finally:
        proc.terminate()
        proc.wait(10)
