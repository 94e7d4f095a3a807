"""`kep mcp serve`, listed and called over stdio by the mcp SDK's own client, by raw JSON-RPC,
and by the MCP Inspector CLI (npm)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import KEP, kep_env, write_tool
from fakes.npm_peers import npm_bin, npm_package_dir
from mcp import Client, StdioServerParameters
from mcp import types as mt

TOOLS = r'''#!/usr/bin/env python3
import json, sys
FUNCS = [
    {"name": "greet", "description": "Say hello",
     "parameters": {"type": "object", "properties": {"who": {"type": "string"}},
                    "required": ["who"]}},
    {"name": "explode", "description": "Always fails", "parameters": {"type": "object"}},
    {"name": "nuke", "description": "Denied by policy", "parameters": {"type": "object"}},
    {"name": "shell", "description": "Policy asks", "parameters": {"type": "object"}},
]
if sys.argv[1] == "--list-functions":
    print(json.dumps(FUNCS))
    sys.exit(0)
args = json.load(sys.stdin)
if sys.argv[1] == "greet":
    print(f"hello {args['who']}")
elif sys.argv[1] == "explode":
    print("lots of noise", file=sys.stderr)
    print("kaboom: disk on fire", file=sys.stderr)
    sys.exit(1)
else:
    print(f"{sys.argv[1]} ran")
'''

KEP_TOML = '''
[tools]
builtins = false

[approval]
default = "ask"

[[approval.rules]]
tool = "nuke"
action = "deny"

[[approval.rules]]
tool = "greet"
args = "mallory"
action = "deny"

[[approval.rules]]
tool = "greet|explode|extra"
action = "allow"
'''


@pytest.fixture
def served(project: Path) -> Path:
    write_tool(project / "prompts" / "functions" / "tools", TOOLS)
    (project / "kep.toml").write_text(KEP_TOML)
    return project


def params(root: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=KEP[0], args=[*KEP[1:], "mcp", "serve", "--project",
                                                       str(root), *extra], env=kep_env())


def names(result: mt.ListToolsResult) -> list[str]:
    return sorted(t.name for t in result.tools)


def text(result: mt.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, mt.TextContent))


async def test_sdk_client_lists_and_calls_with_policy_enforced(served: Path) -> None:
    async with Client(params(served), cache=None) as client:
        listed = await client.list_tools()
        # nuke is denied, shell asks: neither is offered.
        assert names(listed) == ["explode", "greet"]
        greet = next(t for t in listed.tools if t.name == "greet")
        assert greet.input_schema["required"] == ["who"] and greet.description == "Say hello"

        ok = await client.call_tool("greet", {"who": "ada"})
        assert not ok.is_error and text(ok).strip() == "hello ada"

        failed = await client.call_tool("explode", {})
        assert failed.is_error
        assert "kaboom: disk on fire" in text(failed)  # the stderr tail

        denied = await client.call_tool("nuke", {})
        assert denied.is_error and "denied by kep's policy" in text(denied)
        # An argument-specific deny is enforced at call time, even for a listed tool.
        by_args = await client.call_tool("greet", {"who": "mallory"})
        assert by_args.is_error and "denied" in text(by_args)

        asks = await client.call_tool("shell", {})
        assert asks.is_error and "--allow-ask" in text(asks)

        bad = await client.call_tool("greet", {})
        assert bad.is_error and "invalid arguments" in text(bad)


async def test_allow_ask_offers_ask_tools_but_never_denied_ones(served: Path) -> None:
    async with Client(params(served, "--allow-ask"), mode="legacy", cache=None) as client:
        assert names(await client.list_tools()) == ["explode", "greet", "shell"]
        ran = await client.call_tool("shell", {})
        assert not ran.is_error and text(ran).strip() == "shell ran"
        assert (await client.call_tool("nuke", {})).is_error


@pytest.mark.slow
async def test_hot_reload_sends_list_changed_in_both_protocol_eras(served: Path) -> None:
    changed = asyncio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            changed.set()

    async with Client(params(served), mode="legacy", cache=None,
                      message_handler=on_message) as legacy, \
            Client(params(served), cache=None) as modern, \
            modern.listen(tools_list_changed=True) as events:
        assert modern.protocol_version != legacy.protocol_version  # 2026 era vs handshake
        assert "extra" not in names(await legacy.list_tools())
        write_tool(served / "prompts" / "functions" / "more", TOOLS.replace(
            'FUNCS = [', 'FUNCS = [{"name": "extra", "description": "New", '
                         '"parameters": {"type": "object"}}] or ['))
        await asyncio.wait_for(changed.wait(), 20)
        assert "extra" in names(await legacy.list_tools())
        assert text(await legacy.call_tool("extra", {})).strip() == "extra ran"
        async with asyncio.timeout(20):
            async for _event in events:  # a ToolsListChanged
                break
        assert "extra" in names(await modern.list_tools())


# kep with prints where none belong: while listing tools and while running a call.
STRAY_PRINTS = """
import sys
from tuiapp.tools.registry import Registry
from tuiapp.tools.runner import Runner
refresh, execute = Registry.refresh, Runner.execute
async def noisy_refresh(self, *a, **k):
    print("stray print during refresh")
    return await refresh(self, *a, **k)
async def noisy_execute(self, *a, **k):
    print("stray print during a call", flush=True)
    return await execute(self, *a, **k)
Registry.refresh, Runner.execute = noisy_refresh, noisy_execute
from tuiapp.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_stdout_carries_only_protocol_messages(served: Path) -> None:
    """Raw JSON-RPC over pipes: every stdout line is a JSON-RPC message, nothing else, even
    when kep itself prints."""
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "explode", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "greet", "arguments": {"who": "bob"}}},
    ]
    proc = subprocess.Popen([sys.executable, "-c", STRAY_PRINTS, "mcp", "serve", "--project",
                             str(served)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=kep_env())
    assert proc.stdin and proc.stdout
    for r in requests:
        proc.stdin.write((json.dumps(r) + "\n").encode())
        proc.stdin.flush()
    answers: dict[int, dict] = {}
    lines: list[bytes] = []
    while len(answers) < 4:
        line = proc.stdout.readline()
        assert line, proc.stderr.read().decode() if proc.stderr else "no output"
        lines.append(line)
        msg = json.loads(line)
        assert msg["jsonrpc"] == "2.0"
        if "id" in msg:
            answers[msg["id"]] = msg
    proc.stdin.close()
    rest = proc.stdout.read()
    assert proc.wait(20) == 0
    assert rest.strip() == b""  # nothing after the last answer either
    assert answers[1]["result"]["capabilities"]["tools"]["listChanged"] is True
    assert sorted(t["name"] for t in answers[2]["result"]["tools"]) == ["explode", "greet"]
    assert answers[3]["result"]["isError"] is True
    assert answers[4]["result"]["content"][0]["text"].strip() == "hello bob"
    assert proc.stderr and b"stray print during a call" in proc.stderr.read()


def test_a_bad_project_config_fails_on_stderr_with_exit_2(tmp_path: Path) -> None:
    (tmp_path / "kep.toml").write_text("[approval\n")
    proc = subprocess.run([*KEP, "mcp", "serve", "--project", str(tmp_path)],
                          capture_output=True, env=kep_env(), timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"kep.toml" in proc.stderr


@pytest.mark.slow
def test_mcp_inspector_cli_lists_kep_tools(served: Path, tmp_path: Path) -> None:
    npm_package_dir("@modelcontextprotocol/inspector")
    home = tmp_path / "home"
    home.mkdir()
    env = kep_env(HOME=str(home))
    proc = subprocess.run(
        [str(npm_bin("mcp-inspector")), "--cli", KEP[0], *KEP[1:], "mcp", "serve",
         "--project", str(served), "--method", "tools/list"],
        capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    listed = json.loads(proc.stdout)
    assert sorted(t["name"] for t in listed["tools"]) == ["explode", "greet"]


@pytest.mark.slow
def test_kep_mcp_serve_does_not_start_itself_again(served: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """An mcp.json naming `kep mcp serve` for its own project must not recurse. (Without the
    walls: a kep inside them reading its trust records is test_sandbox_mcp_trust.py's.)"""
    monkeypatch.setenv("KEP_SANDBOX_MECHANISM", "none")
    (served / "mcp.json").write_text(json.dumps({"mcpServers": {"self": {
        "command": KEP[0], "args": [*KEP[1:], "mcp", "serve", "--project", str(served)]}}}))
    with (served / "kep.toml").open("a") as f:
        f.write('\n[[approval.rules]]\ntool = "self_.*"\naction = "allow"\n')

    async def go() -> list[str]:
        async with Client(params(served), mode="legacy", cache=None) as client:
            for _ in range(100):
                listed = names(await client.list_tools())
                if any(n.startswith("self_") for n in listed):
                    return listed
                await asyncio.sleep(0.1)
            return listed

    listed = asyncio.run(go())
    # The inner kep serves the project's tools; it does not start its own `self` server.
    assert "self_greet" in listed and not any(n.startswith("self_self_") for n in listed)
    assert os.environ.get("KEP_MCP_SERVING") is None  # only the served processes carry it
