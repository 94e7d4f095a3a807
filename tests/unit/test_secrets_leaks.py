"""Keys never leak: not into a tool's environment (every format, discovery, MCP servers), not
into the request to the provider, sessions.db or the spool, not into an error, not out of
`kep config show`."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import KEP, kep_env
from fakes.llm_server import FakeLLMServer

from tuiapp.project import config as project_config
from tuiapp.security import secrets
from tuiapp.settings import config, config_types
from tuiapp.settings.config_types import McpServerConfig
from tuiapp.tools.registry import Registry
from tuiapp.tools.runner import Runner
from tuiapp.vocab.events import Event, ToolOutput
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.trust_state import TrustState

KEY = "sk-proj-LEAKTEST-0123456789abcdefghijkl"
DOT = "dotenv-secret-VALUE-98765"
PASSED = "ghp_passedTokenValue0123456789"
ANT = "sk-ant-api03-LEAKTEST-abcdefghijklmnop"
GH = "plain-github-token-value-42"  # in kep's environment only, not key-shaped
NAMES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DOT_SECRET", "ALIAS_OF_KEY", "PASSED_TOKEN",
         "GIVEN_TOKEN", "GITHUB_PERSONAL_ACCESS_TOKEN")
EXPECTED = {"OPENAI_API_KEY": None, "ANTHROPIC_API_KEY": None, "DOT_SECRET": None,
            "ALIAS_OF_KEY": None, "PASSED_TOKEN": "[redacted PASSED_TOKEN]", "GIVEN_TOKEN": None,
            "GITHUB_PERSONAL_ACCESS_TOKEN": None}
DUMP = f"json.dumps({{k: os.environ.get(k) for k in {NAMES!r}}})"

KEPROMPT = f"""#!{sys.executable}
import json, os, sys
if sys.argv[1] == "--list-functions":
    print(json.dumps([{{"name": "dump_keprompt", "parameters": {{"type": "object"}},
                       "description": "env " + str(os.environ.get("OPENAI_API_KEY"))}}]))
else:
    print({DUMP})
"""
PY_FUNCTION = f'''import json
import os


def run():
    """Dump the environment."""
    return {DUMP}
'''
PACK = f'''import json
import os

NAME = "Envp"
SYSTEM_PROMPT = ""


def ENVP_dump() -> str:
    """Dump the environment."""
    return {DUMP}


TOOLS = [ENVP_dump]
'''
AITOOL = f'''import json
import os


class DumpTool:
    name = "dump_aitool"
    description = "Dump the environment."
    parameters_schema = {{"type": "object", "properties": {{}}}}

    def execute(self, **kwargs):
        return {DUMP}
'''
MCP_SERVER = f'''import asyncio, json, os
import mcp.types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(name="dump", description="env",
                                                   input_schema={{"type": "object"}})])


async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(type="text", text={DUMP})])


async def main():
    server = Server("envdump", version="1", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


asyncio.run(main())
'''


@pytest.fixture(autouse=True)
def forget_dotenv(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secrets, "_dotenv_names", set())
    monkeypatch.setattr(secrets, "_passed_values", {})


@pytest.fixture
def keyed(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with a provider key in the environment, a copy of it under another name and
    two `.env` secrets, one of them passed to tools on purpose."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANT)
    monkeypatch.setenv("ALIAS_OF_KEY", KEY)
    for name in ("DOT_SECRET", "PASSED_TOKEN"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)  # removed again after the test, whoever set it
    (project / ".env").write_text(f"DOT_SECRET={DOT}\nPASSED_TOKEN={PASSED}\n")
    project_config.load_dotenv(project, TrustState(str(project), True))
    return project


def write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


@pytest.mark.slow
async def test_no_tool_format_gets_a_key_and_output_is_redacted(keyed: Path) -> None:
    root = keyed
    # Three Python scripts with one shebang: their discovery goes through a fork server.
    for suffix in ("", "2", "3"):
        write(root / f"prompts/functions/dump_keprompt{suffix}",
              KEPROMPT.replace("dump_keprompt", f"dump_keprompt{suffix}"), 0o755)
    write(root / "tools/dump_llm.py", PY_FUNCTION)
    write(root / "functions/tools/dump_loki.py", PY_FUNCTION)
    write(root / "extensions/envp/envp_tool.py", PACK)
    write(root / "mytools/dump_tool.py", AITOOL)
    cfg = config.parse({"tools": {"builtins": False, "python": sys.executable,
                                  "pass_env": ["PASSED_TOKEN"],
                                  "sources": [{"format": "aitool", "path": "mytools"}]}},
                       "test", root)
    registry = Registry(cfg)
    await registry.refresh()
    tools = registry.tools
    assert [b.error for b in registry.broken] == []
    for suffix in ("", "2", "3"):  # discovery got no key either
        assert tools[f"dump_keprompt{suffix}"].description == "env None"
    runner = Runner(cfg, spool_dir=root / "spool")
    for name in ("dump_keprompt", "dump_llm", "dump_loki", "ENVP_dump", "dump_aitool"):
        events: list[Event] = []
        fin = await runner.execute(tools[name], ToolCall(f"c-{name}", name, {}), events.append)
        assert fin.status == "ok", (name, fin.result)
        assert json.loads(fin.result) == EXPECTED, name
        shown = "".join(e.text for e in events if isinstance(e, ToolOutput))
        spool = Path(fin.spool_path).read_text()
        for text in (fin.result, shown, spool):
            for secret in (KEY, ANT, DOT, PASSED):
                assert secret not in text, name


@pytest.mark.slow
async def test_mcp_servers_get_no_key_unless_their_env_passes_one(
    keyed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tuiapp.mcp.client import McpFormat, McpManager

    monkeypatch.setenv("MY_GH", GH)
    write(keyed / "envdump_server.py", MCP_SERVER)
    server = McpServerConfig("envsrv", sys.executable, (str(keyed / "envdump_server.py"),),
                             env={"GIVEN_TOKEN": "${DOT_SECRET}",
                                  "GITHUB_PERSONAL_ACCESS_TOKEN": "${MY_GH}"})
    cfg = config_types.Config(project_root=keyed, mcp_servers={"envsrv": server})
    manager = McpManager(cfg, on_tools=lambda k, items: None, on_state=lambda s: None)
    manager.start()
    try:
        await manager.wait_settled(30)
        spec = {s.name: s for s in manager.tools()}["envsrv_dump"]
        runner = Runner(cfg, spool_dir=keyed / "spool", formats=[McpFormat(manager)])
        fin = await runner.execute(spec, ToolCall("m1", spec.name, {}), lambda e: None)
    finally:
        await manager.stop()
    assert fin.status == "ok", fin.result
    assert json.loads(fin.result) == {
        **EXPECTED, "PASSED_TOKEN": None, "GIVEN_TOKEN": "[redacted DOT_SECRET]",
        "GITHUB_PERSONAL_ACCESS_TOKEN": "[redacted GITHUB_PERSONAL_ACCESS_TOKEN]"}


@pytest.mark.slow
def test_readfile_env_and_grep_key_put_no_key_in_the_request_the_store_or_the_spool(
    project: Path,
) -> None:
    (project / ".env").write_text(f"OPENAI_API_KEY={KEY}\nDOT_SECRET={DOT}\n")
    (project / "settings.py").write_text(f'API_KEY = "{KEY}"  # oops, committed\n')
    script = [
        {"tool_calls": [{"name": "readfile", "arguments": {"filename": ".env"}}]},
        {"tool_calls": [{"name": "grep", "arguments": {"pattern": "KEY", "path": "."}}]},
        {"text": "done"},
    ]
    with FakeLLMServer(script) as server:
        (project / "kep.toml").write_text(
            'model = "fake/m"\n[providers.fake]\n'
            f'api = "chat"\nbase_url = "{server.base_url}"\napi_key_env = "FAKE_LLM_KEY"\n')
        env = kep_env(FAKE_LLM_KEY="fake-provider-key-0123456789")
        res = subprocess.run([*KEP, "run", "--yes", "--project", str(project), "look around"],
                             cwd=project, env=env, capture_output=True, text=True, timeout=120)
        assert res.returncode == 1, res.stderr  # readfile .env is refused: a failed call
        requests = [json.dumps(r.body) for r in server.requests]
    assert len(requests) == 3
    assert "a .env file (it holds keys)" in requests[1]  # refused whatever redaction would do
    assert "settings.py:1: API_KEY = \\\"[redacted OPENAI_API_KEY]\\\"" in requests[2]
    data_dir = Path(env["KEP_DATA_DIR"])
    stored = [p for p in data_dir.rglob("*") if p.is_file()]
    assert any(p.suffix == ".log" for p in stored) and any(p.name == "sessions.db" for p in stored)
    for text in [*requests, res.stdout, res.stderr]:
        assert KEY not in text and DOT not in text
    for p in stored:
        data = p.read_bytes()
        assert KEY.encode() not in data and DOT.encode() not in data, p
    with sqlite3.connect(data_dir / "sessions.db") as db:
        dump = "\n".join(db.iterdump())
        sid = db.execute("SELECT id FROM sessions").fetchone()[0]
    assert "[redacted OPENAI_API_KEY]" in dump and KEY not in dump
    for fmt in ("md", "json"):
        out = subprocess.run([*KEP, "sessions", "export", "--project", str(project), "--format",
                              fmt, str(sid)], cwd=project, env=env, capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert "[redacted OPENAI_API_KEY]" in out.stdout
        assert KEY not in out.stdout and DOT not in out.stdout


def test_config_show_masks_by_value_as_well_as_by_name(project: Path) -> None:
    (project / "kep.toml").write_text(
        '[providers.openai]\nheaders = { "X-Trace" = "' + KEY + '" }\n'
        '[mcp.servers.gh]\ncommand = "npx"\nenv = { GITHUB_PAT = "plain0value0123" }\n')
    res = subprocess.run([*KEP, "config", "show", "--project", str(project)], cwd=project,
                         env=kep_env(OPENAI_API_KEY=KEY), capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    assert KEY not in res.stdout and "plain0value0123" not in res.stdout
    assert 'X-Trace = "****"' in res.stdout and 'GITHUB_PAT = "****"' in res.stdout
    assert "OPENAI_API_KEY set" in res.stdout


@pytest.mark.parametrize("api", ["responses", "chat", "anthropic"])
@pytest.mark.parametrize("case", ["prefix", "newline"])
async def test_provider_errors_show_no_part_of_the_key(
    api: str, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tuiapp.providers.anthropic import AnthropicProvider
    from tuiapp.providers.base import ProviderFailure
    from tuiapp.providers.openai_chat import ChatProvider
    from tuiapp.providers.openai_responses import ResponsesProvider
    from tuiapp.settings.config_types import ProviderConfig

    cls = {"responses": ResponsesProvider, "chat": ChatProvider, "anthropic": AnthropicProvider}
    key = KEY + ("\n" if case == "newline" else "")  # a stray newline from a pasted key
    monkeypatch.setenv("MY_KEY", key)
    # The API echoes the first 26 characters of the key it got, as real APIs do.
    reply = {"error": 403, "message": f"Incorrect API key provided: {KEY[:26]}****. See docs."}
    with FakeLLMServer([reply]) as server:
        url = server.url if api == "anthropic" else server.base_url
        provider = cls[api](ProviderConfig("p", api, url, "MY_KEY"), "m")  # type: ignore[arg-type]
        with pytest.raises(ProviderFailure) as info:
            async for _ in provider.stream([], [], ""):
                pass
        await provider.aclose()
    message = info.value.message
    assert message.startswith("p: ")
    for i in range(len(KEY) - 7):
        assert KEY[i:i + 8] not in message, message
