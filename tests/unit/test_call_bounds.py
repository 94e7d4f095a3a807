"""Bounds on what a model may ask for at once: parallel calls, calls per reply, the offer."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from test_conversation import ECHO, Recorder, Scripted, call, conv
from test_runner import Recorder as RunRecorder
from test_runner import runner, tool

from tuiapp.providers.base import StreamEnd
from tuiapp.settings.config import parse
from tuiapp.settings.config_types import ApprovalConfig, ToolsConfig
from tuiapp.tools.offer import offered, too_big
from tuiapp.vocab.events import Notice, ToolCallQueued, ToolCallStarted, ToolFinished
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec


def _concurrency_tool(root: Path) -> ToolSpec:
    """Counts how many of its copies run at once (a file per running copy)."""
    (root / "live").mkdir(exist_ok=True)
    return tool(
        root,
        "busy",
        # (a file name of its own, not $$: inside the sandbox each call has its own pid 2)
        f'me=$(mktemp {root}/live/XXXXXX); ls {root}/live | wc -l >> {root}/counts; '
        f'echo "$LLM_TOOL_NAME $me" >> {root}/order; sleep 0.15; rm $me',
    )


async def test_at_most_max_parallel_calls_run_and_the_rest_queue_in_order(tmp_path: Path) -> None:
    r = runner(tmp_path, max_parallel=3)
    spec = _concurrency_tool(tmp_path)
    rec = RunRecorder()
    calls = [ToolCall(f"c{i}", "busy", {}) for i in range(12)]
    results = await asyncio.gather(*(r.execute(spec, c, rec) for c in calls))
    assert all(f.status == "ok" for f in results)
    counts = [int(x) for x in (tmp_path / "counts").read_text().split()]
    assert len(counts) == 12 and max(counts) <= 3
    queued = [e.call_id for _, e in rec.events if isinstance(e, ToolCallQueued)]
    assert queued == [f"c{i}" for i in range(3, 12)]
    started = [e.call_id for _, e in rec.events if isinstance(e, ToolCallStarted)]
    assert started == [c.id for c in calls]  # first come, first served


async def test_a_queued_call_can_be_cancelled_and_never_runs(tmp_path: Path) -> None:
    r = runner(tmp_path, max_parallel=1)
    spec = tool(tmp_path, "slow", f"echo $$ >> {tmp_path}/ran; sleep 0.5")
    rec = RunRecorder()
    first = asyncio.ensure_future(r.execute(spec, ToolCall("a", "slow", {}), rec))
    second = asyncio.ensure_future(r.execute(spec, ToolCall("b", "slow", {}), rec))
    for _ in range(200):
        if r.queued() == ["b"]:
            break
        await asyncio.sleep(0.01)
    assert r.queued() == ["b"]
    assert r.cancel("b")
    fin_b = await second
    assert fin_b.status == "cancelled" and "before it started" in fin_b.result
    assert (await first).status == "ok"
    assert len((tmp_path / "ran").read_text().split()) == 1


async def test_interrupting_the_turn_finishes_queued_calls_as_cancelled(tmp_path: Path) -> None:
    r = runner(tmp_path, max_parallel=1)
    spec = tool(tmp_path, "slow", "sleep 5")
    rec = RunRecorder()
    tasks = [asyncio.ensure_future(r.execute(spec, ToolCall(f"c{i}", "slow", {}), rec))
             for i in range(3)]
    await asyncio.sleep(0.3)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    finished = {e.call_id: e.status for _, e in rec.events if isinstance(e, ToolFinished)}
    assert finished == {"c0": "cancelled", "c1": "cancelled", "c2": "cancelled"}
    assert r.queued() == [] and r._gate.running == 0


@pytest.mark.slow
async def test_500_queued_calls_finish_and_memory_of_the_gate_is_released(tmp_path: Path) -> None:
    r = runner(tmp_path, max_parallel=8)
    spec = tool(tmp_path, "quick", "true")
    rec = RunRecorder()
    t0 = time.monotonic()
    results = await asyncio.gather(
        *(r.execute(spec, ToolCall(f"c{i}", "quick", {}), rec) for i in range(500)))
    assert all(f.status == "ok" for f in results), time.monotonic() - t0
    assert r.queued() == [] and r._gate.running == 0


async def test_calls_beyond_max_calls_per_reply_are_refused_to_the_model() -> None:
    calls = [call(str(i), f"c{i}") for i in range(70)]
    p = Scripted([*calls, StreamEnd("tool_use")], [StreamEnd("end_turn")])
    rec = Recorder()
    c = conv(p, rec, tool_settings=lambda: ToolsConfig(max_calls_per_reply=64))
    await c.turn("go")
    assert len(rec.ran) == 64
    results = [m for m in c.history if m.role == "tool"]
    assert len(results) == 70  # every call gets an answer, in order
    refused = results[64:]
    assert all(m.is_error and "max_calls_per_reply" in m.content for m in refused)
    assert "70 tool calls" in refused[0].content
    assert not any(m.is_error for m in results[:64])


def _specs(n: int, desc: str = "d") -> dict[str, ToolSpec]:
    return {f"t{i}": ToolSpec(f"t{i}", desc, {"type": "object"}, "keprompt", "/x")
            for i in range(n)}


async def test_an_offer_over_max_offered_warns_once_saying_how_to_narrow() -> None:
    p = Scripted([call(), StreamEnd("tool_use")], [StreamEnd("end_turn")], [StreamEnd("end_turn")])
    rec = Recorder()
    tools = {**_specs(300), "echo": ECHO}
    c = conv(p, rec)
    c.tools = lambda: tools
    await c.turn("a")
    await c.turn("b")
    warnings = [n.text for n in rec.of(Notice) if n.level == "warning"]
    assert len(warnings) == 1
    assert "301 tools" in warnings[0] and "max_offered" in warnings[0]
    assert "include" in warnings[0] and "exclude" in warnings[0]


def test_over_64_kb_of_definitions_warns() -> None:
    tools = _specs(100, "x" * 1000)
    assert too_big(tools, ToolsConfig()) is not None
    assert "64 KB" in (too_big(tools, ToolsConfig()) or "")
    assert too_big(_specs(10), ToolsConfig()) is None


def test_a_5_mb_description_is_cut_with_a_note() -> None:
    big = ToolSpec("big", "y" * 5_000_000, {"type": "object"}, "keprompt", "/x")
    out = offered({"big": big}, ToolsConfig())["big"]
    assert len(out.description) < 9000
    assert "description truncated by kep" in out.description
    assert out.description.startswith("y" * 8192)


async def test_the_request_carries_the_capped_description() -> None:
    big = ToolSpec("echo", "z" * 5_000_000, ECHO.parameters, "keprompt", "/x")
    seen: list[int] = []

    class Capture(Scripted):
        async def stream(self, messages: Any, tools: Any, system: Any) -> Any:
            seen.append(sum(len(t.description) for t in tools))
            async for item in super().stream(messages, tools, system):
                yield item

    c = conv(Capture([StreamEnd("end_turn")]), Recorder())
    c.tools = lambda: {"echo": big}
    await c.turn("x")
    assert seen and seen[0] < 10_000


def test_include_and_exclude_are_globs_on_the_whole_name(tmp_path: Path) -> None:
    cfg = parse({"tools": {"include": ["git_*", "read?ile"], "exclude": ["git_push"]}},
                "kep.toml", tmp_path)
    names = ["git_log", "git_push", "readfile", "readfile2", "xgit_log", "shell"]
    tools = {n: ToolSpec(n, n, {"type": "object"}, "keprompt", "/x") for n in names}
    assert sorted(offered(tools, cfg.tools)) == ["git_log", "readfile"]


async def test_an_excluded_tool_is_not_offered_nor_run() -> None:
    p = Scripted([call(), StreamEnd("tool_use")], [StreamEnd("end_turn")])
    rec = Recorder()
    c = conv(p, rec, tool_settings=lambda: ToolsConfig(exclude=("ech*",)),
             approval=ApprovalConfig("allow"))
    await c.turn("x")
    assert rec.ran == []
    assert "unknown tool" in next(m for m in c.history if m.role == "tool").content


def test_bad_bound_values_are_one_clear_error(tmp_path: Path) -> None:
    import pytest

    from tuiapp.settings.config_types import ConfigError

    for tools, key in (({"max_parallel": 0}, "tools.max_parallel"),
                       ({"include": "git_*"}, "tools.include"),
                       ({"exclude": [""]}, "tools.exclude"),
                       ({"spool_max_mb": -1}, "tools.spool_max_mb")):
        with pytest.raises(ConfigError) as e:
            parse({"tools": tools}, "kep.toml", tmp_path)
        assert e.value.key == key
    assert parse({"tools": {"max_parallel": 0.5}}, "k", tmp_path).tools.max_parallel == 1


async def test_kep_run_text_mode_prints_a_line_as_each_call_queues_and_starts(
        tmp_path: Path) -> None:
    """What the TUI shows as "queued", `kep run` says on stderr: one line when a call waits
    for a slot, one when it starts; calls that never waited print no extra line."""
    import io

    from tuiapp.commands.run import Printer

    r = runner(tmp_path, max_parallel=2)
    spec = _concurrency_tool(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    printer = Printer(False, out=out, err=err)
    calls = [ToolCall(f"c{i}", "busy", {}) for i in range(5)]
    results = await asyncio.gather(*(r.execute(spec, c, printer) for c in calls))
    assert all(f.status == "ok" for f in results)
    lines = err.getvalue().splitlines()
    queued = [line for line in lines if "queued" in line]
    started = [line for line in lines if line.endswith(" started")]
    assert queued == ["  busy queued (waiting for a free slot)",
                      "  busy queued (waiting for a free slot, 1 ahead)",
                      "  busy queued (waiting for a free slot, 2 ahead)"]
    assert started == ["  busy started"] * 3  # the three that waited, as each got a slot
    assert out.getvalue() == ""  # stdout stays the reply's
    assert sum(line.startswith("✔ busy ok") for line in lines) == 5
