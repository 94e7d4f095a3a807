"""The runner: streaming, results, timeouts and cancel without orphans, floods, bad bytes."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tools_testutil import make_config, read_pid, wait_gone

from tuiapp.tools.formats.base import FormatContext
from tuiapp.tools.formats.keprompt import KepromptFormat
from tuiapp.tools.runner import DirectResult, Runner
from tuiapp.vocab.events import Event, ToolCallStarted, ToolFinished, ToolOutput
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import Invocation, ToolSpec


def tool(root: Path, name: str, body: str) -> ToolSpec:
    """A /bin/sh tool at root/prompts/functions/NAME whose call runs `body`."""
    path = root / "prompts" / "functions" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return ToolSpec(name, name, {"type": "object"}, "keprompt", str(path), run={"exe": str(path)})


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[float, Event]] = []

    def __call__(self, event: Event) -> None:
        self.events.append((time.monotonic(), event))

    def outputs(self, stream: str | None = None) -> list[str]:
        return [
            e.text
            for _, e in self.events
            if isinstance(e, ToolOutput) and (stream is None or e.stream == stream)
        ]


def runner(root: Path, **tools: Any) -> Runner:
    return Runner(make_config(root, **tools), spool_dir=root / "spool")


async def run(
    r: Runner,
    spec: ToolSpec,
    args: dict[str, Any] | None = None,
    rec: Recorder | None = None,
    call_id: str = "c1",
) -> ToolFinished:
    return await r.execute(spec, ToolCall(call_id, spec.name, args or {}), rec or Recorder())


async def test_lines_stream_as_they_come_and_stdout_is_the_result(project: Path) -> None:
    spec = tool(project, "slow", "echo one; sleep 0.4; echo two")
    rec = Recorder()
    fin = await run(runner(project), spec, rec=rec)
    assert (fin.status, fin.exit_code, fin.result) == ("ok", 0, "one\ntwo")
    assert isinstance(rec.events[0][1], ToolCallStarted)
    outs = [(t, e) for t, e in rec.events if isinstance(e, ToolOutput)]
    assert [e.text for _, e in outs] == ["one\n", "two\n"]  # two events, one per line
    assert outs[1][0] - outs[0][0] > 0.2  # the first arrived while the tool was still running
    assert rec.events[-1][1] == fin


async def test_environment_cwd_stdin_and_no_terminal(project: Path) -> None:
    spec = tool(
        project,
        "env",
        (
            'cat > "$LLM_ROOT_DIR/stdin.json"\n'
            'echo "$LLM_ROOT_DIR|$LLM_TOOL_NAME|$LLM_TOOL_CACHE_DIR|'
            '$KEP_ALLOW_OUTSIDE_ROOT|$(pwd)"\n'
            "if [ -t 0 ] || [ -t 1 ] || [ -t 2 ]; then echo has-tty; fi\n"
            "(exec 3</dev/tty) 2>/dev/null && echo has-controlling-terminal\n"
            "true"
        ),
    )
    fin = await run(runner(project), spec, {"x": "é"})
    cache = project / "cache" / "env"
    assert fin.result == f"{project}|env|{cache}||{project}"
    assert json.loads((project / "stdin.json").read_text()) == {"x": "é"}
    assert not cache.exists()  # named for the tool, created only if the tool wants it
    fin = await run(runner(project, allow_outside_root=True), spec)
    assert fin.result.split("|")[3] == "1"


async def test_failure_gives_exit_code_and_stderr_and_spool_marks_stderr(project: Path) -> None:
    spec = tool(project, "fails", "echo partial; echo 'it broke' >&2; echo more >&2; exit 3")
    rec = Recorder()
    fin = await run(runner(project), spec, rec=rec)
    assert (fin.status, fin.exit_code) == ("failed", 3)
    assert fin.result.startswith("Error: fails failed with exit code 3.")
    assert "it broke\nmore" in fin.result and "partial" in fin.result
    assert "".join(rec.outputs("stderr")) == "it broke\nmore\n"
    spool = Path(fin.spool_path).read_text()
    assert "partial\n" in spool and "[stderr] it broke\n[stderr] more\n" in spool
    assert spool.rstrip().endswith("exit code 3, " + spool.rstrip().split("exit code 3, ")[1])


async def test_timeout_kills_the_whole_group(project: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    spec = tool(project, "hang", f"sleep 300 &\necho $! > {pidfile}\necho started\nwait")
    r = runner(project, timeouts={"hang": 0.5})
    fin = await run(r, spec)
    assert (fin.status, fin.exit_code) == ("timed_out", None)
    assert "timed out after 0.5 s" in fin.result and "started" in fin.result
    assert wait_gone(read_pid(pidfile))


async def test_cancel_kills_the_whole_group(project: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    spec = tool(project, "hang", f"sleep 300 &\necho $! > {pidfile}\nwait")
    r = runner(project)
    task = asyncio.create_task(run(r, spec, call_id="x1"))
    child = await asyncio.to_thread(read_pid, pidfile)
    assert r.running() == ["x1"]
    assert r.cancel("x1") is True
    fin = await task
    assert fin.status == "cancelled" and "cancelled by the user" in fin.result
    assert wait_gone(child)
    assert r.cancel("x1") is False and r.cancel("nope") is False
    if fin.spool_path:  # the viewer shows this footer: no "exit code None" for a cancel
        footer = Path(fin.spool_path).read_text().rstrip().splitlines()[-1]
        assert footer.startswith("[kep: cancelled, ") and "None" not in footer


async def test_interrupting_the_turn_kills_the_group_too(project: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    spec = tool(project, "hang", f"sleep 300 &\necho $! > {pidfile}\nwait")
    rec = Recorder()
    task = asyncio.create_task(run(runner(project), spec, rec=rec))
    child = await asyncio.to_thread(read_pid, pidfile)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert wait_gone(child)
    assert isinstance(rec.events[-1][1], ToolFinished) and rec.events[-1][1].status == "cancelled"


async def test_cancel_while_starting_never_waits_for_the_children(
    project: Path, tmp_path: Path
) -> None:
    # Cancelled at every early await point: inside asyncio's process start, the child may
    # already run and fork; kep must still kill the group instead of waiting for its pipes.
    for spins in range(8):
        pidfile = tmp_path / f"pid{spins}"
        spec = tool(project, "hang", f"sleep 300 &\necho $! > {pidfile}\nwait")
        task = asyncio.create_task(run(runner(project), spec))
        for _ in range(spins):
            await asyncio.sleep(0)
        task.cancel()
        async with asyncio.timeout(10):  # the bug this guards against waits 300 s
            with pytest.raises(asyncio.CancelledError):
                await task
        await asyncio.sleep(0.2)
        if pidfile.exists() and pidfile.read_text().strip():
            assert wait_gone(int(pidfile.read_text()))


async def test_background_child_holding_the_pipes_does_not_hang_the_call(
    project: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pid"
    spec = tool(project, "bg", f"sleep 300 &\necho $! > {pidfile}\necho done")
    fin = await run(runner(project), spec)
    assert (fin.status, fin.result) == ("ok", "done")
    assert wait_gone(read_pid(pidfile))  # it would have been an orphan


async def test_output_cap_keeps_head_and_tail_with_a_note(project: Path) -> None:
    spec = tool(project, "big", "seq 1 2000")
    fin = await run(runner(project, output_cap=1000), spec)
    assert fin.truncated and fin.status == "ok"
    assert fin.result.startswith("1\n2\n3\n") and fin.result.endswith("1999\n2000")
    assert "[… output truncated:" in fin.result and "bytes omitted of 8893" in fin.result
    assert fin.spool_path in fin.result
    assert len(fin.result.encode()) < 1300
    assert Path(fin.spool_path).read_text().count("\n") == 2001  # everything, plus the footer


async def test_invalid_utf8_and_a_5mb_line(project: Path) -> None:
    spec = tool(
        project,
        "bytes",
        r"printf 'ok \377\376 bad \303\n'; head -c 5242880 /dev/zero | tr '\0' 'y'",
    )
    rec = Recorder()
    fin = await run(runner(project), spec, rec=rec)
    assert fin.status == "ok" and fin.truncated
    assert fin.result.startswith("ok \ufffd\ufffd bad \ufffd\nyyy")
    outs = rec.outputs()
    assert sum(len(t) for t in outs) == 5242880 + len("ok \ufffd\ufffd bad \ufffd\n")
    assert len(outs) < 200 and max(len(t) for t in outs) <= 512 * 1024


FLOOD_CHECK = """
import asyncio, json, resource, sys
from pathlib import Path
from tuiapp.settings import config
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec
from tuiapp.tools.runner import Runner
root, exe = Path(sys.argv[1]), sys.argv[2]
cfg = config.parse({"tools": {"builtins": False}}, "t", root)
spec = ToolSpec("flood", "", {"type": "object"}, "keprompt", exe, run={"exe": exe})
n = [0, 0]
def emit(ev):
    if type(ev).__name__ == "ToolOutput":
        n[0] += 1; n[1] += len(ev.text)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
runner = Runner(cfg, spool_dir=root / "spool")
fin = asyncio.run(runner.execute(spec, ToolCall("c", "flood", {}), emit))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"growth_kib": after - before, "events": n[0], "chars": n[1],
                  "status": fin.status, "result_len": len(fin.result), "spool": fin.spool_path}))
"""


@pytest.mark.slow
def test_50mb_of_output_with_bounded_memory(project: Path) -> None:
    spec = tool(
        project, "flood", "yes 'all work and no play makes kep a dull tool' | head -c 52428800"
    )
    out = subprocess.run(
        [sys.executable, "-c", FLOOD_CHECK, str(project), spec.source],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    res = json.loads(out.stdout)
    assert res["status"] == "ok" and res["chars"] == 52428800
    assert res["growth_kib"] < 30 * 1024, res  # 50 MB passed through; far less was held
    assert res["events"] < 2000  # batched, not one event per line (over a million lines)
    assert res["result_len"] < 70 * 1024
    assert Path(res["spool"]).stat().st_size > 52428800


async def test_a_tool_that_cannot_start_is_a_failed_call(project: Path) -> None:
    spec = tool(project, "gone", "true")
    Path(spec.source).unlink()
    fin = await run(runner(project), spec)
    assert fin.status == "failed" and fin.result.startswith("Error: could not start gone:")


async def test_llm_output_file_is_made_read_and_removed(project: Path) -> None:
    class OutFile(KepromptFormat):
        def invocation(
            self, spec: ToolSpec, arguments: dict[str, Any], ctx: FormatContext
        ) -> Invocation:
            inv = super().invocation(spec, arguments, ctx)
            return dataclasses.replace(inv, output_file=Path("LLM_OUTPUT"))

        def result_text(self, spec: ToolSpec, stdout: str, output_file_text: str | None) -> str:
            return output_file_text or "DONE"

    spec = tool(
        project,
        "writer",
        'echo noise; echo "$LLM_OUTPUT" > "$LLM_ROOT_DIR/where"; '
        'echo "from the file" > "$LLM_OUTPUT"',
    )
    r = Runner(make_config(project), spool_dir=project / "spool", formats=[OutFile()])
    fin = await run(r, spec)
    assert fin.result == "from the file"
    assert not Path((project / "where").read_text().strip()).exists()


class Direct(KepromptFormat):
    """A format that runs in-process (the MCP seam)."""

    async def execute(
        self, spec: ToolSpec, arguments: dict[str, Any], ctx: FormatContext, output: Any
    ) -> DirectResult:
        output("stdout", "working\n")
        if arguments.get("sleep"):
            await asyncio.sleep(arguments["sleep"])
        return DirectResult(not arguments.get("fail"), f"answer {arguments}")


async def test_direct_formats_get_events_timeout_and_cancel(project: Path) -> None:
    spec = ToolSpec("d", "", {"type": "object"}, "keprompt", "mcp:x")
    r = Runner(
        make_config(project, timeouts={"d": 0.3}), spool_dir=project / "spool", formats=[Direct()]
    )
    rec = Recorder()
    fin = await run(r, spec, {"n": 1}, rec=rec)
    assert (fin.status, fin.result, rec.outputs()) == ("ok", "answer {'n': 1}", ["working\n"])
    assert (await run(r, spec, {"fail": True})).result == "Error: answer {'fail': True}"
    assert (await run(r, spec, {"sleep": 5})).status == "timed_out"
    task = asyncio.create_task(run(r, spec, {"sleep": 0.2}, call_id="d2"))
    await asyncio.sleep(0.05)
    assert r.cancel("d2")
    assert (await task).status == "cancelled"
