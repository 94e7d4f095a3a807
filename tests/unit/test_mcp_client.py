"""kep as an MCP client: real peers (mcp-server-time from PyPI, server-everything from npm) and
an in-repo server that crashes, hangs and floods (tests/fakes/mcp_server.py)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fakes.npm_peers import npm_package_dir

from tuiapp.mcp.client import McpFormat, McpManager, ServerState
from tuiapp.mcp.servers import McpJsonError, configured_servers, read_mcp_json, tool_name
from tuiapp.mcp.startup import EXIT_MARK, process_group
from tuiapp.settings.config_types import Config, McpServerConfig, ToolsConfig
from tuiapp.tools.registry import Registry
from tuiapp.tools.runner import Runner
from tuiapp.vocab.events import Event, RegistryChanged, ToolCallStarted, ToolFinished, ToolOutput
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import BrokenTool, ToolSpec

FAKE = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")


def fake(name: str = "fake", *flags: str, **kw: object) -> McpServerConfig:
    return McpServerConfig(name, sys.executable, (FAKE, *flags), **kw)  # type: ignore[arg-type]


class Sink:
    """Stands in for Registry.set_external and the functions panel."""

    def __init__(self) -> None:
        self.items: dict[str, list[ToolSpec | BrokenTool]] = {}
        self.states: list[ServerState] = []

    def tools(self, key: str, items: list[ToolSpec | BrokenTool]) -> None:
        self.items[key] = items

    def names(self, key: str) -> list[str]:
        return sorted(i.name for i in self.items.get(key, []) if isinstance(i, ToolSpec))

    def broken(self, key: str) -> list[str]:
        return [i.error for i in self.items.get(key, []) if isinstance(i, BrokenTool)]


@pytest.fixture
async def start(tmp_path: Path) -> AsyncIterator:
    managers: list[McpManager] = []

    async def _start(*servers: McpServerConfig, settle: bool = True, **cfg: object
                     ) -> tuple[McpManager, Sink]:
        sink = Sink()
        config = Config(project_root=tmp_path, mcp_servers={s.name: s for s in servers},
                        **cfg)  # type: ignore[arg-type]
        manager = McpManager(config, on_tools=sink.tools, on_state=sink.states.append)
        managers.append(manager)
        manager.start()
        if settle:
            await manager.wait_settled(30)
        return manager, sink

    yield _start
    for m in managers:
        await m.stop()


def runner(manager: McpManager) -> Runner:
    return Runner(manager.config, spool_dir=manager.config.project_root / "spool",
                  formats=[McpFormat(manager)])


async def call(manager: McpManager, name: str, args: dict | None = None,
               events: list[Event] | None = None) -> ToolFinished:
    """Through the runner, as the conversation loop runs every tool."""
    spec = {s.name: s for s in manager.tools()}[name]
    return await runner(manager).execute(spec, ToolCall("c1", name, args or {}),
                                         (events if events is not None else []).append)


# ---- naming and configuration ---------------------------------------------------------------

def test_tool_names_are_prefixed_lowercased_and_safe() -> None:
    assert tool_name("git", "log") == "git_log"
    assert tool_name("My-Server", "Get-Thing") == "my_server_get_thing"
    assert tool_name("fs", "read.file/v2") == "fs_read_file_v2"
    assert tool_name("fs", "Read-File", prefix=False) == "read_file"


def test_mcp_json_is_read_in_claude_desktop_format_and_kep_toml_wins(tmp_path: Path) -> None:
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {
        "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"A": "1"}},
        "old": {"command": "x", "disabled": True},
        "web": {"url": "http://127.0.0.1:9/mcp"},
    }}))
    servers = read_mcp_json(tmp_path / "mcp.json")
    assert servers["git"] == McpServerConfig("git", "uvx", ("mcp-server-git",), {"A": "1"})
    assert servers["old"].enabled is False
    assert servers["web"].url == "http://127.0.0.1:9/mcp"
    config = Config(project_root=tmp_path, mcp_servers={"git": McpServerConfig("git", "mine")})
    assert configured_servers(config)["git"].command == "mine"
    assert read_mcp_json(tmp_path / "absent.json") == {}


@pytest.mark.parametrize("text, why", [
    ("{nope", "not valid JSON"),
    ('{"mcpServers": []}', "expected"),
    ('{"mcpServers": {"a": {"args": []}}}', "mcpServers.a: needs command"),
    ('{"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}', "mcpServers.a.env"),
])
def test_a_bad_mcp_json_says_what_is_wrong(tmp_path: Path, text: str, why: str) -> None:
    (tmp_path / "mcp.json").write_text(text)
    with pytest.raises(McpJsonError, match=why):
        read_mcp_json(tmp_path / "mcp.json")


@pytest.mark.slow
async def test_a_bad_mcp_json_shows_as_a_failed_entry_and_kep_toml_servers_still_start(
        tmp_path: Path, start) -> None:
    (tmp_path / "mcp.json").write_text("{nope")
    manager, sink = await start(fake())
    states = manager.states()
    assert states["mcp.json"].status == "failed" and "not valid JSON" in states["mcp.json"].reason
    assert "not valid JSON" in sink.broken("mcp:mcp.json")[0]
    assert states["fake"].status == "ready"


# ---- the real peer from PyPI ----------------------------------------------------------------

@pytest.mark.slow
async def test_mcp_server_time_lists_calls_and_reports_a_bad_timezone(start, capfd) -> None:
    manager, sink = await start(McpServerConfig("time", sys.executable, ("-m", "mcp_server_time")))
    assert manager.states()["time"].describe() == "ready (2 tools)"
    assert sink.names("mcp:time") == ["time_convert_time", "time_get_current_time"]
    spec = {s.name: s for s in manager.tools()}["time_get_current_time"]
    assert spec.format == "mcp" and spec.source == "mcp:time"
    assert spec.parameters["required"] == ["timezone"]

    events: list[Event] = []
    fin = await call(manager, "time_get_current_time", {"timezone": "Europe/Paris"}, events)
    assert fin.status == "ok"
    assert json.loads(fin.result)["timezone"] == "Europe/Paris"
    assert isinstance(events[0], ToolCallStarted) and events[-1] == fin

    fin = await call(manager, "time_get_current_time", {"timezone": "Mars/Olympus_Mons"})
    assert fin.status == "failed"
    assert "Invalid timezone" in fin.result
    # The server logged that failure on its stderr: it went to the log file, not the terminal.
    out, err = capfd.readouterr()
    assert "Invalid timezone" not in out + err
    log = Path(manager.states()["time"].log_path)
    assert log.name == "mcp-time.log" and "Invalid timezone" in log.read_text()


# ---- the in-repo fake server ----------------------------------------------------------------

@pytest.mark.slow
async def test_start_returns_before_any_server_is_ready(start) -> None:
    manager, _ = await start(fake(), settle=False)
    assert {s.status for s in manager.states().values()} == {"starting"}
    assert manager.tools() == []
    await manager.wait_settled(30)
    assert manager.states()["fake"].status == "ready"


async def test_result_shapes_names_and_broken_schemas(start) -> None:
    manager, sink = await start(fake())
    names = sink.names("mcp:fake")
    assert "fake_get_thing" in names and "fake_echo" in names
    [bad] = sink.broken("mcp:fake")
    assert bad.startswith("bad_schema: invalid schema")
    assert manager.states()["fake"].describe() == f"ready ({len(names)} tools)"

    assert (await call(manager, "fake_echo", {"text": "hi"})).result == "hi"
    assert (await call(manager, "fake_get_thing")).result == "Get-Thing ran"
    media = await call(manager, "fake_media")
    assert media.status == "ok"
    assert media.result.splitlines() == [
        "here you go",
        "[image: image/png, 2.0 KiB]",
        "[resource: file:///notes.txt, text/plain]",
        "x" * 300,  # an embedded text resource reaches the model (issue 15)
        "[resource link: file:///big.bin, 4.9 KiB]",
    ]
    structured = await call(manager, "fake_structured")
    assert json.loads(structured.result) == {"answer": 42, "unit": "m"}
    failed = await call(manager, "fake_fail")
    assert failed.status == "failed" and failed.result == "Error: it failed: no such thing"


@pytest.mark.slow
async def test_progress_notifications_stream_as_tool_output(start) -> None:
    manager, _ = await start(fake())
    events: list[Event] = []
    fin = await call(manager, "fake_progress", {"steps": 3}, events)
    assert fin.result == "progress done"
    outputs = "".join(e.text for e in events if isinstance(e, ToolOutput))
    assert outputs == "step 1 of 3 (1/3)\nstep 2 of 3 (2/3)\nstep 3 of 3 (3/3)\n"


@pytest.mark.slow
async def test_list_changed_refreshes_the_tools(start) -> None:
    manager, sink = await start(fake())
    assert "fake_extra" not in sink.names("mcp:fake")
    await call(manager, "fake_grow")
    for _ in range(100):
        if "fake_extra" in sink.names("mcp:fake"):
            break
        await asyncio.sleep(0.02)
    assert "fake_extra" in sink.names("mcp:fake")
    assert (await call(manager, "fake_extra")).result == "extra ran"


@pytest.mark.slow
async def test_a_server_that_ends_quietly_still_says_its_exit_status(start) -> None:
    """Its output closes half a second before it exits (status 5), with nothing on stderr:
    the state says the status, not just "no stderr output"."""
    manager, _ = await start(fake("fake", "--quiet-exit", "0.5"))
    for _ in range(400):
        if manager.states()["fake"].status == "exited":
            break
        await asyncio.sleep(0.02)
    assert manager.states()["fake"].describe() == "exited (exit status 5, no stderr output)"


@pytest.mark.slow
async def test_prefix_can_be_dropped(start) -> None:
    _, sink = await start(fake(), mcp_prefix=False)
    assert "echo" in sink.names("mcp:fake") and "get_thing" in sink.names("mcp:fake")


@pytest.mark.slow
async def test_a_crash_mid_call_is_reported_marks_tools_broken_and_restart_recovers(start) -> None:
    manager, sink = await start(fake())
    fin = await call(manager, "fake_crash")
    assert fin.status == "failed"
    assert "exited during the call" in fin.result
    assert "crashed on purpose" in fin.result  # the stderr tail
    for _ in range(200):
        if manager.states()["fake"].status == "exited":
            break
        await asyncio.sleep(0.02)
    state = manager.states()["fake"]
    # its exit status, then its last stderr lines (issue 15: not its start banner)
    assert state.describe() == "exited (exit status 7: fatal: the fake server crashed on purpose)"
    assert manager.tools() == [] and sink.names("mcp:fake") == []
    [broken] = sink.broken("mcp:fake")
    assert "exited" in broken and "fake_echo" in broken and state.log_path in broken
    # A call to a tool of a dead server is answered, not hung.
    spec = ToolSpec("fake_echo", "", {"type": "object"}, "mcp", "mcp:fake",
                    run={"server": "fake", "tool": "echo"})
    dead = await runner(manager).execute(spec, ToolCall("c2", "fake_echo", {}), lambda e: None)
    assert dead.status == "failed" and "exited" in dead.result

    manager.restart("fake")
    await asyncio.sleep(0)
    await manager.wait_settled(30)
    assert manager.states()["fake"].status == "ready"
    assert (await call(manager, "fake_echo", {"text": "back"})).result == "back"
    assert [s.status for s in sink.states if s.name == "fake"] == [
        "starting", "ready", "exited", "starting", "ready"]


async def test_servers_that_crash_hang_or_are_missing_at_start_fail_with_a_reason(start) -> None:
    manager, sink = await start(
        fake("crashy", "--crash-on-start"),
        fake("hangy", "--hang-on-start", startup_timeout=0.5),
        McpServerConfig("missing", "/no/such/kep-mcp-server"),
        fake("off", enabled=False),
    )
    states = manager.states()
    assert states["crashy"].describe() == (
        "failed (exited during start-up with exit status 3: config error: FAKE_TOKEN is not set)")
    assert states["hangy"].describe() == "failed (no answer within 0.5s (startup_timeout))"
    assert states["missing"].describe() == "failed (command not found: /no/such/kep-mcp-server)"
    assert states["off"].status == "disabled"
    assert "FAKE_TOKEN" in sink.broken("mcp:crashy")[0]
    assert manager.tools() == []


@pytest.mark.slow
async def test_timeout_and_cancel_apply_and_the_server_survives(start) -> None:
    manager, _ = await start(fake(), tools=ToolsConfig(timeouts={"fake_hang": 0.3}))
    fin = await call(manager, "fake_hang")
    assert fin.status == "timed_out" and "timed out after 0.3 s" in fin.result

    events: list[Event] = []
    task = asyncio.ensure_future(call(manager, "fake_hang", {}, events))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert isinstance(events[-1], ToolFinished) and events[-1].status == "cancelled"
    assert (await call(manager, "fake_echo", {"text": "alive"})).result == "alive"


@pytest.mark.slow
async def test_a_server_left_on_an_abandoned_call_is_killed_at_the_end(start) -> None:
    """`kep call` waited about 4 s after a timeout: the server, busy with the call kep gave
    up on, got the polite close (stdin, 2 s, SIGTERM, 2 s). It is killed at once instead."""
    manager, _ = await start(fake(), tools=ToolsConfig(timeouts={"fake_hang": 0.3}))
    assert (await call(manager, "fake_hang")).status == "timed_out"
    pgid = process_group(Path(manager.states()["fake"].log_path).read_text())
    assert pgid is not None
    await manager.stop()
    for _ in range(100):  # SIGKILL is delivered asynchronously
        if not living_in_group(pgid):
            break
        await asyncio.sleep(0.02)
    assert living_in_group(pgid) == []  # the whole group is gone (zombies aside)
    # Killed, not closed politely: the wrapper never got to note how the server ended.
    assert EXIT_MARK not in Path(manager.states()["fake"].log_path).read_text()


def living_in_group(pgid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        try:
            fields = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in "ZX":
            out.append(int(name))
    return out


@pytest.mark.slow
async def test_floods_are_capped_and_stderr_floods_stay_in_the_log(start, capfd) -> None:
    manager, _ = await start(fake("fake", "--stderr-flood", "300000"),
                             tools=ToolsConfig(output_cap=10_000))
    fin = await call(manager, "fake_flood", {"kb": 512})
    assert fin.truncated and fin.status == "ok"
    assert len(fin.result.encode()) < 11_000 and "output truncated" in fin.result
    out, err = capfd.readouterr()
    assert "eeee" not in out + err
    log = Path(manager.states()["fake"].log_path).read_text()
    assert "flood over" in log and len(log) > 300_000


# ---- node peer: @modelcontextprotocol/server-everything --------------------------------------

@pytest.mark.slow
async def test_client_against_server_everything(start) -> None:
    pkg = npm_package_dir("@modelcontextprotocol/server-everything")
    manager, sink = await start(McpServerConfig(
        "everything", "node", (str(pkg / "dist" / "index.js"), "stdio"), startup_timeout=60))
    assert manager.states()["everything"].status == "ready", manager.states()["everything"]
    names = sink.names("mcp:everything")
    assert "everything_echo" in names
    fin = await call(manager, "everything_echo", {"message": "hello"})
    assert fin.status == "ok" and "hello" in fin.result


# ---- wiring: the real registry, and config changes ---------------------------------------------

@pytest.mark.slow
async def test_tools_flow_into_the_registry_and_break_and_recover_with_the_server(
        tmp_path: Path) -> None:
    config = Config(project_root=tmp_path, mcp_servers={"fake": fake()})
    registry = Registry(config, formats=[])
    changes: list[RegistryChanged] = []
    manager = McpManager.for_registry(config, registry, emit=changes.append)
    manager.start()
    try:
        await manager.wait_settled(30)
        assert "fake_echo" in registry.tools
        assert "fake_echo" in changes[-1].added
        assert [b.source for b in registry.broken] == ["mcp:fake/bad_schema"]
        await call(manager, "fake_crash")
        for _ in range(200):
            if "fake_echo" not in registry.tools:
                break
            await asyncio.sleep(0.02)
        assert "fake_echo" not in registry.tools
        assert "mcp:fake" in {b.source for b in registry.broken}
        manager.restart("fake")  # the stale "exited" entry goes at once; the tools come back
        assert "mcp:fake" not in {b.source for b in registry.broken}
        await manager.wait_settled(30)
        assert "fake_echo" in registry.tools and "fake_echo" in changes[-1].added
    finally:
        await manager.stop()


@pytest.mark.slow
async def test_reconfigure_starts_new_servers_stops_removed_ones_and_restarts_changed(
        start, tmp_path: Path) -> None:
    manager, sink = await start(fake("a"), fake("b"), fake("d"))
    assert sink.names("mcp:a") and sink.names("mcp:b")
    manager.reconfigure(Config(project_root=tmp_path, mcp_servers={
        "a": fake("a", "--stderr-flood", "10"), "c": fake("c"), "d": fake("d", enabled=False)}))
    await asyncio.sleep(0)
    await manager.wait_settled(30)
    assert set(manager.states()) == {"a", "c", "d"}
    assert sink.items["mcp:b"] == [] and sink.items["mcp:d"] == []  # gone from the registry
    assert manager.states()["d"].status == "disabled"
    assert sink.names("mcp:c")
    assert [s.status for s in sink.states if s.name == "a"] == [
        "starting", "ready", "starting", "ready"]
