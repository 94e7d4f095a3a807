"""MCP as the ecosystem expects (issue 15): headers with ${VAR} on http servers and a 401
named as such, the legacy HTTP+SSE transport, images and mirrored base64 never reaching the
model as text, embedded text resources reaching it (capped), task-required tools listed as
broken with the reason. The servers are real (tests/fakes/mcp_http_server.py on loopback)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tuiapp.mcp.client import McpFormat, McpManager
from tuiapp.mcp.results import RESOURCE_CAP
from tuiapp.mcp.servers import expand_headers, read_mcp_json
from tuiapp.settings.config_types import Config, McpServerConfig
from tuiapp.tools.runner import Runner
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import BrokenTool, ToolSpec

FAKE = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_http_server.py")


def serve(*args: str) -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, FAKE, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{line.split()[1]}"
    finally:
        proc.kill()
        proc.wait(10)


@pytest.fixture
def http_server() -> Iterator[str]:
    yield from serve("--transport", "http", "--token", "s3cret")


@pytest.fixture
def sse_server() -> Iterator[str]:
    yield from serve("--transport", "sse")


class Sink:
    def __init__(self) -> None:
        self.items: dict[str, list[ToolSpec | BrokenTool]] = {}

    def tools(self, key: str, items: list[ToolSpec | BrokenTool]) -> None:
        self.items[key] = items


@pytest.fixture
async def start(tmp_path: Path) -> AsyncIterator:
    managers: list[McpManager] = []

    async def _start(*servers: McpServerConfig) -> tuple[McpManager, Sink]:
        sink = Sink()
        cfg = Config(project_root=tmp_path, mcp_servers={s.name: s for s in servers})
        manager = McpManager(cfg, on_tools=sink.tools, on_state=lambda s: None)
        managers.append(manager)
        manager.start()
        await manager.wait_settled(30)
        return manager, sink

    yield _start
    for m in managers:
        await m.stop()


async def call(manager: McpManager, name: str, args: dict | None = None) -> str:
    specs = {s.name: s for s in manager.tools()}
    assert name in specs, manager.states()
    spec = specs[name]
    runner = Runner(manager.config, spool_dir=manager.config.project_root / "spool",
                    formats=[McpFormat(manager)])
    fin = await runner.execute(spec, ToolCall("c1", name, args or {}), lambda e: None)
    assert fin.status == "ok", fin.result
    return fin.result


def test_headers_expand_variables_and_mcp_json_reads_them(tmp_path: Path) -> None:
    env = {"TOKEN": "abc", "EMPTY": ""}
    assert expand_headers({"Authorization": "Bearer ${TOKEN}", "X": "${EMPTY:-dflt}",
                           "Y": "${NOPE}-${TOKEN}"}, env) == {
        "Authorization": "Bearer abc", "X": "dflt", "Y": "-abc"}
    f = tmp_path / "mcp.json"
    f.write_text('{"mcpServers": {"r": {"url": "http://x/sse", "type": "sse", '
                 '"headers": {"Authorization": "Bearer ${TOKEN}"}}}}')
    cfg = read_mcp_json(f)["r"]
    assert (cfg.transport, cfg.headers) == ("sse", {"Authorization": "Bearer ${TOKEN}"})
    f.write_text('{"mcpServers": {"r": {"url": "http://x", "headers": {"A": 1}}}}')
    with pytest.raises(Exception, match="headers"):
        read_mcp_json(f)
    f.write_text('{"mcpServers": {"r": {"url": "http://x", "type": "carrier-pigeon"}}}')
    with pytest.raises(Exception, match="type"):
        read_mcp_json(f)


async def test_headers_are_sent_and_a_401_is_named(start, http_server: str, monkeypatch) -> None:
    monkeypatch.setenv("KEP_TEST_MCP_TOKEN", "s3cret")
    good = McpServerConfig("auth", url=f"{http_server}/mcp",
                           headers={"Authorization": "Bearer ${KEP_TEST_MCP_TOKEN}"},
                           startup_timeout=10)
    bad = McpServerConfig("noauth", url=f"{http_server}/mcp", startup_timeout=10)
    unset = McpServerConfig("unset", url=f"{http_server}/mcp", startup_timeout=10,
                            headers={"Authorization": "Bearer ${KEP_TEST_MCP_NOPE}"})
    manager, _ = await start(good, bad, unset)
    states = manager.states()
    assert states["auth"].status == "ready"
    assert await call(manager, "auth_echo", {"text": "hi"}) == "hi"
    assert states["noauth"].status == "failed"
    assert "unauthorized (HTTP 401)" in states["noauth"].reason
    assert "unset variable(s) KEP_TEST_MCP_NOPE" in states["unset"].reason


async def test_legacy_sse_transport(start, sse_server: str) -> None:
    manager, _ = await start(McpServerConfig("old", url=f"{sse_server}/sse", transport="sse",
                                             startup_timeout=10))
    assert manager.states()["old"].status == "ready", manager.states()["old"].reason
    assert await call(manager, "old_echo", {"text": "over sse"}) == "over sse"


async def test_images_and_structured_base64_never_reach_the_model_as_text(
        start, sse_server: str) -> None:
    manager, _ = await start(McpServerConfig("fs", url=f"{sse_server}/sse", transport="sse",
                                             startup_timeout=10))
    text = await call(manager, "fs_read_media_file", {"path": "pic.png"})
    assert len(text) < 2000, len(text)  # was 64 KB of base64 for a 300 KB image
    assert "[image: image/png, 300.0 KiB]" in text
    assert '"path": "pic.png"' in text and "[base64 data, 300.0 KiB]" in text
    assert "iVBORw0KGgo" not in text  # the PNG header in base64


async def test_embedded_text_resources_reach_the_model_capped(start, sse_server: str) -> None:
    manager, _ = await start(McpServerConfig("fs", url=f"{sse_server}/sse", transport="sse",
                                             startup_timeout=10))
    text = await call(manager, "fs_embedded")
    assert text.startswith("see the resource\n[resource: file:///notes.txt, text/plain]\n"
                           "line of the embedded resource\n")
    assert text.endswith(f"… [resource cut at {RESOURCE_CAP} of 60000 characters]")


@pytest.mark.slow
async def test_task_required_tools_are_listed_broken_with_the_reason(
        start, sse_server: str) -> None:
    manager, sink = await start(McpServerConfig("fs", url=f"{sse_server}/sse", transport="sse",
                                                startup_timeout=10))
    names = {s.name for s in manager.tools()}
    assert "fs_task_only" not in names and "fs_echo" in names
    broken = [i.error for i in sink.items["mcp:fs"] if isinstance(i, BrokenTool)]
    assert any("task_only" in b and "task" in b and "not support" in b for b in broken)


@pytest.mark.slow
async def test_resources_and_prompts_are_listed_with_the_server(start, sse_server: str) -> None:
    manager, _ = await start(McpServerConfig("docs", url=f"{sse_server}/sse", transport="sse",
                                             startup_timeout=10))
    state = manager.states()["docs"]
    assert state.resources == ("readme", "schema") and state.prompts == ("review",)
    assert state.describe() == ("ready (3 tools, 2 resources (readme, schema), "
                                "1 prompt (review))")  # task_only is broken, not counted


@pytest.mark.slow
def test_an_mcp_prompt_starts_a_session(sse_server: str, tmp_path: Path) -> None:
    """`kep run --prompt mcp:SERVER/NAME --set arg=…`: the server's messages open the
    conversation and its last user message is sent, as a .prompt file's would be."""
    import json

    from conftest import KEP, kep_env

    root = tmp_path / "proj"
    root.mkdir()
    (root / "mcp.json").write_text(json.dumps({"mcpServers": {"docs": {
        "url": f"{sse_server}/sse", "type": "sse"}}}))
    (root / "kep.toml").write_text("[tools]\nbuiltins = false\n")

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*KEP, "run", "--project", str(root), "--model", "offline",
                               "--json", "--prompt", "mcp:docs/review", *extra],
                              capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL, env=kep_env())

    ok = run("--set", "change=rename foo to bar")
    assert ok.returncode == 0, ok.stderr
    events = [json.loads(line) for line in ok.stdout.splitlines() if line.startswith("{")]
    texts = json.dumps(events)
    assert "Review this change: rename foo to bar" in texts
    missing = run()
    assert missing.returncode != 0
    assert "review needs the argument 'change'" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_kep_call_of_a_broken_mcp_tool_says_why(sse_server: str, tmp_path: Path) -> None:
    """A task-only tool is listed as broken: `kep call` says why, not "unknown tool"."""
    import json

    from conftest import KEP, kep_env

    root = tmp_path / "proj"
    root.mkdir()
    (root / "mcp.json").write_text(json.dumps({"mcpServers": {"fs": {
        "url": f"{sse_server}/sse", "type": "sse"}}}))
    (root / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    res = subprocess.run([*KEP, "call", "--project", str(root), "fs_task_only", "{}"],
                         capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL, env=kep_env())
    assert res.returncode == 2
    assert "fs_task_only is broken and cannot be called" in res.stderr
    assert "MCP task" in res.stderr
    assert "unknown tool" not in res.stderr and "Traceback" not in res.stderr
