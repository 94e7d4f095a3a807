"""The walls' resident starter (security/sandbox/starters.py, _child_starter.py) under what a
model or a tool can throw at it: many calls at once, arguments too big for its socket, bytes
that are not UTF-8, a tab or a newline in an argument, the starter itself killed while calls
run. Every call either runs under the walls with its own output, or is started with its own
bwrap instead; none is lost, none gets another's output, nothing leaks."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest
from test_runner import run, tool

from tuiapp.security.sandbox import spawn, starters
from tuiapp.settings import config
from tuiapp.tools.proc import run_collect
from tuiapp.tools.runner import Runner

pytestmark = pytest.mark.skipif(
    spawn.mechanism().missing() is not None and os.environ.get("KEP_TEST_REQUIRE_SANDBOX") != "1",
    reason=f"no sandbox here: {spawn.mechanism().missing()}")


@pytest.fixture(autouse=True)
def every_call_by_a_starter(monkeypatch: pytest.MonkeyPatch, project: Path) -> None:
    monkeypatch.setattr(starters, "START_AT_USE", 1)
    monkeypatch.setattr(starters.pool, "wait_for_start", True)
    starters.pool.close()
    spawn.use_config(config.parse({"tools": {"builtins": False}}, "test", project))


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def echo(project: Path, *args: str, env: dict[str, str] | None = None) -> bytes:
    got = await run_collect(["/bin/sh", "-c", 'printf "%s|" "$@"; printf "%s" "$EXTRA"', "sh",
                             *args], timeout=20, cwd=project,
                            env={**os.environ, **(env or {})})
    assert got.exit_code == 0, got
    return got.stdout


async def test_two_hundred_calls_at_once_each_get_their_own_output(project: Path) -> None:
    await echo(project, "warm")
    fds, handed = _fds(), starters.pool.handed
    outs = await asyncio.gather(*(echo(project, f"call-{i}") for i in range(200)))
    assert outs == [f"call-{i}|".encode() for i in range(200)]
    assert starters.pool.handed - handed == 200  # (not one went around the starter)
    assert _fds() == fds  # pipes, pidfds: nothing left open


@pytest.mark.parametrize("what", ["arguments", "environment"])
async def test_a_request_too_big_for_the_starter_still_runs(project: Path, what: str) -> None:
    """3 x 100 KB: more than the starter's socket takes in one message (each under exec's
    128 KB for one string); bwrap starts it instead."""
    await echo(project, "warm")
    big = ["x" * 100_000, "y" * 100_000, "z" * 100_000]
    handed = starters.pool.handed
    if what == "arguments":
        assert await echo(project, *big) == "|".join(big).encode() + b"|"
    else:
        env = {"EXTRA": big[0], "MORE1": big[1], "MORE2": big[2]}
        assert await echo(project, "a", env=env) == b"a|" + big[0].encode()
    assert starters.pool.handed == handed


async def test_hostile_arguments_arrive_byte_for_byte(project: Path) -> None:
    await echo(project, "warm")
    odd = ["tab\there", "new\nline", os.fsdecode(b"\xff\xfe not utf-8"), "\x1b[31mred\x1b[0m",
           "", " lead", "="]
    out = await echo(project, *odd, env={"EXTRA": os.fsdecode(b"env \xc3\x28 bad")})
    assert out == b"|".join(map(os.fsencode, odd)) + b"|" + b"env \xc3\x28 bad"


async def test_a_killed_starter_ends_its_calls_and_the_next_call_gets_a_new_one(
        project: Path) -> None:
    r = Runner(config.parse({"tools": {"builtins": False}}, "test", project),
               spool_dir=project / ".spool")
    sleeper = tool(project, "sleeper", "echo going; sleep 30; echo never")
    await run(r, tool(project, "quick", "echo hi"))
    running = asyncio.ensure_future(run(r, sleeper, call_id="s"))
    await asyncio.sleep(0.5)
    (first,) = [s for s in starters.pool.starters.values() if s.calls]
    os.kill(first.proc.pid, signal.SIGKILL)  # the bwrap holding the starter's namespace
    fin = await asyncio.wait_for(running, 10)
    assert "never" not in fin.result and fin.status != "ok"
    assert not first.alive
    handed = starters.pool.handed
    again = await run(r, tool(project, "sleeper", "echo again"), call_id="t")
    assert again.status == "ok" and again.result.strip() == "again"
    assert starters.pool.handed == handed + 1  # by a new starter for the same walls


async def test_stdin_reaches_the_call_and_its_end_closes_it(project: Path) -> None:
    await echo(project, "warm")
    data = os.urandom(3 << 20)  # more than a pipe holds: written while the call reads
    got = await run_collect(["/bin/sh", "-c", "cat | wc -c"], timeout=20, cwd=project,
                            env=None, stdin=data)
    assert got.stdout.strip() == str(len(data)).encode()


async def test_calls_do_not_wait_for_a_starter_coming_up(project: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool's third call starts its walls' starter; that call and those that come before it
    is up get a bwrap of their own (no call waits ~50 ms for it); later ones get the starter."""
    monkeypatch.setattr(starters, "START_AT_USE", 3)
    monkeypatch.setattr(starters.pool, "wait_for_start", False)
    handed = starters.pool.handed
    for _ in range(3):
        await echo(project, "early")
    assert starters.pool.handed == handed and len(starters.pool.starters) == 1
    (starter,) = starters.pool.starters.values()
    assert await asyncio.wait_for(asyncio.shield(starter.ready), 10)
    assert await echo(project, "late") == b"late|"
    assert starters.pool.handed == handed + 1
