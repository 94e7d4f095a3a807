"""kep as an MCP client for what servers ask and tell: resources and templates, list_changed,
subscriptions, sampling, elicitation, roots and log messages (tests/fakes/mcp_peer_server.py)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tuiapp.mcp.client import McpFormat, McpManager, McpRequestError
from tuiapp.mcp.peer import (
    ElicitationAnswer,
    ElicitationRequest,
    Refusing,
    SamplingAnswer,
    SamplingRequest,
)
from tuiapp.mcp.resources import TemplateItem
from tuiapp.settings.config_types import Config, McpServerConfig
from tuiapp.tools.runner import Runner
from tuiapp.vocab.messages import ToolCall

PEER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_peer_server.py")


def peer(name: str = "peer", *flags: str, **kw: Any) -> McpServerConfig:
    return McpServerConfig(name, sys.executable, (PEER, *flags), **kw)


class Host:
    """Records what the servers ask; answers as told."""

    def __init__(self, sample: SamplingAnswer | str = "denied by the test",
                 elicit: ElicitationAnswer | None = None) -> None:
        self.samples: list[SamplingRequest] = []
        self.elicits: list[ElicitationRequest] = []
        self.notices: list[tuple[str, str]] = []
        self.updated: list[tuple[str, str]] = []
        self._sample, self._elicit = sample, elicit or ElicitationAnswer("cancel")

    async def sample(self, request: SamplingRequest) -> SamplingAnswer | str:
        self.samples.append(request)
        return self._sample

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        self.elicits.append(request)
        return self._elicit

    def notice(self, text: str, level: str) -> None:
        self.notices.append((text, level))

    def resource_updated(self, server: str, uri: str) -> None:
        self.updated.append((server, uri))


@pytest.fixture
async def start(tmp_path: Path) -> AsyncIterator:
    managers: list[McpManager] = []

    async def _start(*servers: McpServerConfig, host: Any = None) -> McpManager:
        config = Config(project_root=tmp_path, mcp_servers={s.name: s for s in servers})
        manager = McpManager(config)
        if host is not None:
            manager.host = host
        managers.append(manager)
        manager.start()
        await manager.wait_settled(30)
        return manager

    yield _start
    for m in managers:
        await m.stop()


async def call(manager: McpManager, tool: str, args: dict | None = None) -> Any:
    spec = {s.run["tool"]: s for s in manager.tools()}[tool]
    runner = Runner(manager.config, spool_dir=manager.config.project_root / "spool",
                    formats=[McpFormat(manager)])
    done = await runner.execute(spec, ToolCall("c1", spec.name, args or {}), lambda e: None)
    return json.loads(done.result) if done.result.startswith(("{", "[", '"')) else done.result


# ---- resources ------------------------------------------------------------------------------

@pytest.mark.slow
async def test_resources_and_templates_are_listed_read_and_filled_in(start) -> None:
    m = await start(peer())
    cat = m.catalogs()["peer"]
    assert [r.uri for r in cat.resources] == ["memo://note/0", "memo://note/1", "memo://big"]
    assert cat.resources[0].description == "note number 0"
    assert cat.prompts == ("review",)
    (tpl,) = cat.templates
    assert tpl.variables == ("user", "id")
    uri = tpl.expand({"user": "ann/../x?y", "id": "7"})
    assert uri == "memo://user/ann%2F..%2Fx%3Fy/note/7"  # a value cannot add a segment
    got = await m.read_resource("peer", uri)
    assert got.text == f"contents of {uri}" and not got.truncated


@pytest.mark.slow
async def test_a_2_mb_resource_is_cut_and_says_so(start) -> None:
    m = await start(peer())
    got = await m.read_resource("peer", "memo://big")
    assert got.truncated and len(got.text) == 256 * 1024


@pytest.mark.slow
async def test_500_resources_are_all_listed(start) -> None:
    m = await start(peer("peer", "--many"))
    assert len(m.catalogs()["peer"].resources) == 501
    assert m.states()["peer"].describe().startswith("ready (7 tools, 501 resources")


@pytest.mark.slow
async def test_reading_from_a_server_that_is_not_there_is_one_line(start) -> None:
    m = await start(peer())
    with pytest.raises(McpRequestError, match="not configured"):
        await m.read_resource("nope", "memo://x")


def test_template_operators_and_repeated_variables() -> None:
    t = TemplateItem("s", "file:///{+path}{?q,lang}{#frag}", "t")
    assert t.variables == ("path", "q", "lang", "frag")
    assert t.expand({"path": "a/b c", "q": "x&y", "lang": "en", "frag": "top"}) == \
        "file:///a/b%20c?q=x%26y&lang=en#top"


@pytest.mark.slow
async def test_list_changed_refreshes_the_catalog_and_a_flood_is_debounced(start) -> None:
    m = await start(peer())
    states: list[Any] = []
    m._on_state = states.append
    before = len(m.catalogs()["peer"].resources)
    await call(m, "changed", {"n": 300})  # 600 notifications
    await asyncio.sleep(1.0)
    assert len(m.catalogs()["peer"].resources) == before + 1
    assert len(states) <= 30  # a few relists (a busy machine spreads the burst), not 600


@pytest.mark.slow
async def test_subscriptions_report_updates(start) -> None:
    host = Host()
    m = await start(peer(), host=host)
    assert m.catalogs()["peer"].subscribe
    await m.subscribe("peer", "memo://note/0")
    await call(m, "touch", {"uri": "memo://note/0"})
    await asyncio.sleep(0.2)
    assert host.updated == [("peer", "memo://note/0")]


# ---- sampling ------------------------------------------------------------------------------

async def test_sampling_is_asked_of_the_host_and_the_answer_goes_back(start) -> None:
    host = Host(sample=SamplingAnswer("hello from kep", "fake-model"))
    m = await start(peer(), host=host)
    got = await call(m, "sample")
    (req,) = host.samples
    assert req.server == "peer" and req.max_tokens == 77 and req.rule_name == "mcp:peer:sampling"
    assert req.messages == (("user", "Say hello"),) and req.model_hints == ("sonnet",)
    assert req.system == "be brief"
    assert got["content"]["text"] == "hello from kep" and got["model"] == "fake-model"


@pytest.mark.slow
async def test_sampling_without_a_host_is_refused_and_said(start) -> None:
    m = await start(peer())
    said: list[str] = []
    m.host = Refusing(lambda text, level: said.append(text))
    got = await call(m, "sample")
    assert "denied" in str(got) and any("asked to sample" in s for s in said)


@pytest.mark.slow
async def test_ten_mb_of_sampling_messages_is_refused_without_asking(start) -> None:
    host = Host(sample=SamplingAnswer("no", "m"))
    m = await start(peer(), host=host)
    got = await call(m, "sample", {"mb": 10})
    assert host.samples == [] and "refused" in str(got)
    assert any("10.0 MB" in t for t, _ in host.notices)


# ---- elicitation ---------------------------------------------------------------------------

@pytest.mark.slow
async def test_form_elicitation_is_asked_and_answered(start) -> None:
    host = Host(elicit=ElicitationAnswer("accept", {"name": "Ann", "age": 3}))
    m = await start(peer(), host=host)
    got = await call(m, "elicit_form")
    (req,) = host.elicits
    assert req.mode == "form" and set(req.schema["properties"]) == {"name", "age", "ok", "colour"}
    assert got == {"action": "accept", "content": {"name": "Ann", "age": 3}}


@pytest.mark.slow
async def test_url_elicitation_carries_the_url(start) -> None:
    host = Host(elicit=ElicitationAnswer("decline"))
    m = await start(peer(), host=host)
    got = await call(m, "elicit_url")
    assert host.elicits[0].url == "https://example.com/login?x=1"
    assert got == {"action": "decline"}


@pytest.mark.slow
async def test_unsupported_schema_is_declined_with_one_line(start) -> None:
    host = Host(elicit=ElicitationAnswer("accept", {}))
    m = await start(peer(), host=host)
    got = await call(m, "elicit_form", {"kind": "unsupported"})
    assert got == {"action": "decline"} and host.elicits == []
    (line,) = [t for t, _ in host.notices]
    assert "cannot show" in line and "\n" not in line


@pytest.mark.slow
async def test_headless_declines_elicitation_with_a_notice(start) -> None:
    said: list[str] = []
    m = await start(peer(), host=Refusing(lambda t, lv: said.append(t)))
    assert await call(m, "elicit_form") == {"action": "decline"}
    assert any("declined" in s for s in said)


# ---- roots and logging ---------------------------------------------------------------------

@pytest.mark.slow
async def test_roots_are_the_project_root_only(start, tmp_path: Path) -> None:
    m = await start(peer())
    assert await call(m, "roots") == [tmp_path.resolve().as_uri()]


@pytest.mark.slow
async def test_log_level_is_set_and_warnings_become_notices(start) -> None:
    host = Host()
    m = await start(peer(log_level="info"), host=host)
    await call(m, "log_all")
    await asyncio.sleep(0.2)
    levels = [t.split()[3] for t, _ in host.notices]
    assert levels == ["warning", "error", "critical", "alert", "emergency"]
    log = Path(m.states()["peer"].log_path).read_text()
    assert "log level set to info" in log
    assert "server log debug (fake): log at debug" in log  # the rest stays in the log


@pytest.mark.slow
async def test_a_new_project_root_is_announced_and_then_offered(start, tmp_path: Path) -> None:
    from dataclasses import replace

    m = await start(peer())
    other = tmp_path / "elsewhere"
    other.mkdir()
    m.reconfigure(replace(m.config, project_root=other))
    log = Path(m.states()["peer"].log_path)
    for _ in range(100):
        if "roots changed" in log.read_text():
            break
        await asyncio.sleep(0.05)
    assert "roots changed" in log.read_text()
    assert await call(m, "roots") == [other.resolve().as_uri()]


# ---- hostile: every string field a server sends --------------------------------------------

def test_every_string_field_of_a_sampling_request_reaches_the_approval_as_data() -> None:
    """The approval shows a sampling request through its arguments (foreign, like a model's
    tool arguments): every string the server sent is there, unchanged, and nowhere else."""
    import dataclasses

    import mcp.types as types

    from tuiapp.mcp.peer import sampling_request

    evil = "[bold]x[/] \x1b[2J\x07"
    p = types.CreateMessageRequestParams(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(
            type="text", text=evil + "m"))],
        max_tokens=5, system_prompt=evil + "s",
        model_preferences=types.ModelPreferences(hints=[types.ModelHint(name=evil + "h")]))
    req = sampling_request("srv", p)
    assert not isinstance(req, str)
    args = json.dumps(req.arguments())
    for f in dataclasses.fields(req):
        value = getattr(req, f.name)
        for s in (value if isinstance(value, tuple) else (value,)):
            for piece in (s if isinstance(s, tuple) else (s,)):
                if isinstance(piece, str) and piece not in ("srv", "user"):
                    assert json.dumps(piece)[1:-1] in args, f.name


# ---- the project's host: approval, the provider, the cost -----------------------------------

async def test_the_host_asks_runs_on_the_provider_and_counts_the_cost() -> None:
    from collections.abc import Sequence

    from tuiapp.project.mcp_host import for_conversation
    from tuiapp.providers.base import Provider, StreamEnd
    from tuiapp.security.approval_flow import Approval
    from tuiapp.settings.config_types import ProviderConfig
    from tuiapp.vocab.events import TextDelta, Usage
    from tuiapp.vocab.messages import Message

    class Priced(Provider):
        seen: ClassVar[list[Any]] = []

        async def stream(self, messages: Sequence[Message], tools: Sequence[Any],
                         system: str | None) -> AsyncIterator[Any]:
            self.seen.append((list(messages), system))
            yield TextDelta("hi there")
            yield Usage(100, 20)
            yield StreamEnd("end_turn")

        def cost(self, usage: Usage) -> float | None:
            return 0.5

    asked: list[Any] = []

    async def approver(call: Any, spec: Any, verdict: Any) -> Approval:
        asked.append((call.name, call.arguments))
        return Approval(True)

    events: list[Any] = []
    conv = SimpleConv(Priced(ProviderConfig("p", "chat"), "m1"))
    host = for_conversation(conv, approver, events.append)
    req = SamplingRequest("srv", (("user", "hello"),), "sys", ("opus",), 50)
    answer = await host.sample(req)
    assert answer == SamplingAnswer("hi there", "m1")
    assert asked == [("mcp:srv:sampling", req.arguments())]
    assert conv.usage.cost == 0.5 and conv.usage.input_tokens == 100
    assert conv.usage in events  # the footer's figure
    assert Priced.seen[0][1] == "sys" and Priced.seen[0][0][0].content == "hello"


async def test_a_rule_denies_a_servers_sampling_without_asking() -> None:
    from tuiapp.project.mcp_host import McpHost
    from tuiapp.settings.config import parse

    cfg = parse({"approval": {"rules": [{"tool": "mcp:srv:sampling", "action": "deny"}]}},
                "kep.toml", Path("."))
    asked: list[Any] = []

    async def approver(*a: Any) -> Any:
        asked.append(a)

    events: list[Any] = []
    host = McpHost(approval=lambda: cfg.approval, approver=approver, provider=lambda: None,
                   emit=events.append)
    got = await host.sample(SamplingRequest("srv", (("user", "x"),), max_tokens=5))
    assert isinstance(got, str) and "denied by policy" in got and asked == []


class SimpleConv:
    def __init__(self, provider: Any) -> None:
        from tuiapp.settings.config_types import ApprovalConfig
        from tuiapp.vocab.events import Usage

        self.provider = provider
        self.usage = Usage()
        self.approval = lambda: ApprovalConfig()


@pytest.mark.slow
async def test_a_flood_of_error_logs_fills_the_log_not_the_screen(start) -> None:
    host = Host()
    m = await start(peer(), host=host)
    for _ in range(5):
        await call(m, "log_all")  # 5 notice-worthy levels each: 25
    await asyncio.sleep(0.2)
    assert len(host.notices) == 10 and "only go to its log file" in host.notices[-1][0]
    assert Path(m.states()["peer"].log_path).read_text().count("log at emergency") == 5
