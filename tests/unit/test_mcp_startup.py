"""MCP start-up failures are visible (issue 15): the exit status or signal and the last
stderr lines of a server that dies at start, and the stderr of one that never answers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tuiapp.mcp.client import McpManager
from tuiapp.mcp.startup import exit_description
from tuiapp.settings.config_types import Config, McpServerConfig

BANNER = "print('my-server v1.2 starting', file=sys.stderr, flush=True); "


def script(tmp_path: Path, name: str, body: str) -> McpServerConfig:
    f = tmp_path / f"{name}.py"
    f.write_text("import os, signal, sys, time\n" + body + "\n")
    return McpServerConfig(name, sys.executable, (str(f),), startup_timeout=2)


async def test_exit_status_signal_and_stderr_of_servers_that_fail_at_start(tmp_path: Path) -> None:
    servers = [
        script(tmp_path, "killed", BANNER + "os.kill(os.getpid(), signal.SIGKILL)"),
        script(tmp_path, "status", BANNER + "print('bad config', file=sys.stderr); sys.exit(4)"),
        script(tmp_path, "silent", "sys.exit(0)"),
        script(tmp_path, "slow", BANNER + "print('waiting for db', file=sys.stderr, flush=True);"
               " time.sleep(60)"),
    ]
    cfg = Config(project_root=tmp_path, mcp_servers={s.name: s for s in servers})
    manager = McpManager(cfg, on_tools=lambda k, i: None, on_state=lambda s: None)
    manager.start()
    try:
        await manager.wait_settled(30)
        st = {k: v.describe() for k, v in manager.states().items()}
    finally:
        await manager.stop()
    assert st["killed"].startswith("failed (exited during start-up, killed by signal 9 "
                                   "(SIGKILL): my-server v1.2 starting")  # (sh may add Killed)
    assert st["status"] == ("failed (exited during start-up with exit status 4: "
                            "my-server v1.2 starting | bad config)")
    assert st["silent"].startswith("failed (exited during start-up with exit status 0: "
                                   "no stderr output")
    assert st["slow"] == ("failed (no answer within 2s (startup_timeout); its stderr: "
                          "my-server v1.2 starting | waiting for db)")


def test_exit_description_reads_only_kep_lines() -> None:
    assert exit_description("hello\n# kep: exit status 0\n") == "exit status 0"
    assert exit_description("# kep: exit status 143\n") == "killed by signal 15 (SIGTERM)"
    assert exit_description("# kep: exit status 200\n").startswith("killed by signal 72")
    assert exit_description("# kep: exit status nonsense\n") == ""
    assert exit_description("exit status 3 (the server's own words)\n") == ""


FAKE = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")


def slow_server(tmp_path: Path, name: str, delay: float) -> McpServerConfig:
    f = tmp_path / f"{name}.py"
    f.write_text(f"import runpy, sys, time\ntime.sleep({delay})\nsys.argv = [{FAKE!r}]\n"
                 f"runpy.run_path({FAKE!r}, run_name='__main__')\n")
    return McpServerConfig(name, sys.executable, (str(f),), startup_timeout=20)


@pytest.mark.slow
async def test_a_prompt_naming_a_slow_servers_tool_waits_for_it(tmp_path: Path) -> None:
    from tuiapp.mcp import known_tools

    known_tools.remember("slowpoke", ["slowpoke_echo", "echo"])
    cfg = Config(project_root=tmp_path, mcp_servers={"slowpoke": slow_server(
        tmp_path, "slowpoke", 1.5)})
    manager = McpManager(cfg, on_tools=lambda k, i: None, on_state=lambda s: None)
    manager.start()
    try:
        assert await manager.wait_for_prompt("what's the weather?", 0.3) == ["slowpoke"]
        assert await manager.wait_for_prompt("please run slowpoke_echo on 'x'", 0.3) == []
        assert "slowpoke_echo" in {t.name for t in manager.tools()}
    finally:
        await manager.stop()


def test_prompt_naming_is_by_whole_words(tmp_path: Path) -> None:
    from tuiapp.mcp import known_tools

    known_tools.remember("git", ["git_commit", "status"])
    assert known_tools.named_in("use git please", "git")
    assert known_tools.named_in("call git_log", "git")  # a prefixed name, even unknown
    assert known_tools.named_in("show the STATUS", "git")  # a bare (prefix = false) name
    assert not known_tools.named_in("legitimate digits", "git")
    assert not known_tools.named_in("", "git")


@pytest.mark.slow
def test_kep_run_names_servers_still_starting(tmp_path: Path) -> None:
    import json
    import subprocess

    from conftest import KEP, kep_env

    root = tmp_path / "proj"
    root.mkdir()
    slow = slow_server(tmp_path, "laggard", 30)
    (root / "mcp.json").write_text(json.dumps({"mcpServers": {"laggard": {
        "command": slow.command, "args": list(slow.args)}}}))
    (root / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    r = subprocess.run([*KEP, "run", "--project", str(root), "--model", "offline", "hello"],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                       env=kep_env())
    assert r.returncode == 0, r.stderr
    assert "MCP server laggard still starting after 5s" in r.stderr


@pytest.mark.slow
async def test_kep_mcp_serve_first_tools_list_has_its_servers_tools(tmp_path: Path) -> None:
    """A client that lists once (most do) sees the tools of kep's own MCP servers, even a
    server that needs a moment to start."""
    import json

    from conftest import KEP, kep_env
    from mcp import Client, StdioServerParameters

    root = tmp_path / "proj"
    root.mkdir()
    slow = slow_server(tmp_path, "upstream", 1.5)
    (root / "mcp.json").write_text(json.dumps({"mcpServers": {"upstream": {
        "command": slow.command, "args": list(slow.args)}}}))
    (root / "kep.toml").write_text('[tools]\nbuiltins = false\n[approval]\ndefault = "allow"\n')
    params = StdioServerParameters(command=KEP[0], args=[*KEP[1:], "mcp", "serve", "--project",
                                                         str(root)], env=kep_env())
    async with Client(params) as client:
        names = {t.name for t in (await client.list_tools()).tools}
    assert "upstream_echo" in names


@pytest.mark.slow
def test_kep_functions_lists_servers_that_fail_or_time_out_at_start(tmp_path: Path) -> None:
    """Before: a server that timed out at start appeared nowhere in `kep functions`."""
    import json
    import subprocess

    from conftest import KEP, kep_env

    root = tmp_path / "proj"
    root.mkdir()
    (root / "kep.toml").write_text(
        "[tools]\nbuiltins = false\n\n"
        f'[mcp.servers.hung]\ncommand = "{sys.executable}"\n'
        f'args = ["{FAKE}", "--hang-on-start"]\nstartup_timeout = 1\n\n'
        f'[mcp.servers.crashy]\ncommand = "{sys.executable}"\n'
        f'args = ["{FAKE}", "--crash-on-start"]\n')
    r = subprocess.run([*KEP, "functions", "--project", str(root), "--json"],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                       env=kep_env())
    assert "Traceback" not in r.stderr
    listed = {e["source"]: e for e in json.loads(r.stdout)}
    assert listed["mcp:hung"]["status"] == "broken"
    assert "no answer within 1s (startup_timeout)" in listed["mcp:hung"]["error"]
    assert listed["mcp:crashy"]["status"] == "broken"
    assert "exit status 3" in listed["mcp:crashy"]["error"]
    assert "FAKE_TOKEN is not set" in listed["mcp:crashy"]["error"]  # the last stderr line
