"""`network = "on"` still goes through kep's proxy: every host is let through without asking,
each one reached is logged in the call's pane, and a socket that bypasses the proxy (direct
TCP, UDP, DNS) is refused like under "ask". Globally, per tool and per MCP server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_runner import Recorder, run, tool
from test_sandbox_network import PY, Questions, asked, fetch, runner, web

from tuiapp.security.sandbox import spawn
from tuiapp.settings import config
from tuiapp.vocab.events import ToolOutput

__all__ = ["asked", "web"]  # fixtures, used by name

pytestmark = [pytest.mark.skipif(
    spawn.mechanism().missing() is not None and os.environ.get("KEP_TEST_REQUIRE_SANDBOX") != "1",
    reason=f"no sandbox here: {spawn.mechanism().missing()}"),
    pytest.mark.usefixtures("every_start_path")]


def direct(port: int) -> str:
    """A raw TCP connection that ignores the proxy settings."""
    return (f"{PY} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3); "
            f"print('direct ok')\" 2>&1 | tail -1")


def pane(rec: Recorder) -> str:
    return "".join(e.text for _, e in rec.events if isinstance(e, ToolOutput))


@pytest.mark.parametrize("where", ["global", "tool"])
async def test_on_reaches_any_host_through_the_proxy_and_the_pane_lists_it(
        project: Path, web: int, asked: Questions, where: str) -> None:
    sandbox: dict[str, object] = ({"network": "on"} if where == "global" else
                                  {"network": "off", "tools": {"get": {"network": "on"}}})
    rec = Recorder()
    fin = await run(runner(project, **sandbox), tool(project, "get", f"{fetch(web)}; {fetch(web)}"),
                    rec=rec)
    assert fin.result.splitlines()[-1] == "hello from the host"
    assert f"sandbox: network reached through kep's proxy: 127.0.0.1:{web} (2×)" in pane(rec)
    assert asked == []  # "on" never asks


async def test_on_refuses_sockets_that_bypass_the_proxy(project: Path, web: int,
                                                        asked: Questions) -> None:
    rec = Recorder()
    body = (f"{direct(web)}; {PY} -c \"import socket; s = socket.socket(socket.AF_INET, "
            f"socket.SOCK_DGRAM); s.sendto(b'x', ('1.1.1.1', 53)); print('udp ok')\" 2>&1 "
            f"| tail -1; {PY} -c \"import socket; socket.getaddrinfo('example.com', 443); "
            f"print('dns ok')\" 2>&1 | tail -1")
    fin = await run(runner(project, network="on"), tool(project, "raw", body), rec=rec)
    assert "direct ok" not in fin.result
    assert "udp ok" not in fin.result and "dns ok" not in fin.result
    assert asked == []


async def test_off_never_asks_and_reaches_nothing(project: Path, web: int,
                                                  asked: Questions) -> None:
    rec = Recorder()
    fin = await run(runner(project, network="off"),
                    tool(project, "get", f"{fetch(web)}; {direct(web)}"), rec=rec)
    assert "hello" not in fin.result and "direct ok" not in fin.result
    assert asked == [] and "reached" not in pane(rec)


async def test_a_list_lets_its_hosts_through_logged_and_asks_about_the_rest(
        project: Path, web: int, asked: Questions) -> None:
    other = web + 1 if web < 65535 else 1
    rec = Recorder()
    fin = await run(runner(project, network=[f"127.0.0.1:{web}"]),
                    tool(project, "get", f"{fetch(web)}; {fetch(other)}; {direct(web)}"), rec=rec)
    assert "hello from the host" in fin.result and "direct ok" not in fin.result
    assert asked == [("get", "127.0.0.1", other)]
    assert f"reached through kep's proxy: 127.0.0.1:{web}" in pane(rec)
    assert f"refused through kep's proxy: 127.0.0.1:{other}" in pane(rec)


async def test_an_mcp_server_with_on_is_started_behind_the_proxy(project: Path) -> None:
    """[sandbox.servers.NAME] network = "on": the server's process joins the proxy's network
    (it gets the proxy's address, and no network namespace of the host's)."""
    cfg = config.parse({"tools": {"builtins": False},
                        "sandbox": {"network": "off", "servers": {"web": {"network": "on"}}}},
                       "test", project)
    spawn.use_config(cfg)
    await spawn._ensure_network()
    w = spawn.prepare(["/bin/true"], cwd=project, env={"PATH": "/usr/bin:/bin"}, kind="mcp",
                      server="web")
    assert w.env is not None and w.env["HTTPS_PROXY"].startswith("http://")
    assert w.env["NODE_USE_ENV_PROXY"] == "1"  # Node's fetch uses the proxy too
    assert "--net" in w.argv  # joins the proxy's namespace
    plain = spawn.prepare(["/bin/true"], cwd=project, env={"PATH": "/usr/bin:/bin"}, kind="mcp",
                          server="other")
    assert plain.env is not None and "HTTPS_PROXY" not in plain.env  # "off": no proxy at all
    assert "NODE_USE_ENV_PROXY" not in plain.env
    assert "--unshare-net" in plain.argv


def test_kep_sandbox_network_says_which_hosts_it_reached(project: Path, web: int) -> None:
    """`kep sandbox --network -- CMD` runs CMD with network "on": through the proxy, and the
    hosts reached are said after it."""
    import subprocess
    import sys

    from tuiapp.security import trust

    trust.trust(project)
    done = subprocess.run([sys.executable, "-m", "tuiapp", "sandbox", "--network", "--", PY,
                           "-c", f"import urllib.request as u; print(u.urlopen("
                           f"'http://127.0.0.1:{web}/', timeout=5).read().decode().strip())"],
                          cwd=project, text=True, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello from the host\n"
    assert f"sandbox: network reached through kep's proxy: 127.0.0.1:{web}" in done.stderr
