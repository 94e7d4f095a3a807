"""The walls' resident starter (security/sandbox/starters.py, _child_starter.py and its listing
mode, _child_listing_starter.py) under what a model or a tool can throw at it: many calls at
once, arguments too big for its socket, bytes that are not UTF-8, a tab or a newline in an
argument, a program that cannot start, the starter itself killed while calls run, a child that
goes after the one beside it. Every call either runs under the walls with its own output, or is
started with its own bwrap instead; none is lost, none gets another's output, nothing leaks.
Every test runs in both modes: calls (a forked spare each) and listing (a thread each)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from test_runner import run, tool

from tuiapp.security.sandbox import spawn, starters
from tuiapp.settings import config
from tuiapp.tools.proc import run_collect
from tuiapp.tools.runner import Runner

pytestmark = pytest.mark.skipif(
    spawn.mechanism().missing() is not None and os.environ.get("KEP_TEST_REQUIRE_SANDBOX") != "1",
    reason=f"no sandbox here: {spawn.mechanism().missing()}")


@pytest.fixture(autouse=True, params=["calls", "listing"])
def every_call_by_a_starter(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
                            project: Path) -> str:
    monkeypatch.setattr(starters, "START_AT_USE", 1)
    monkeypatch.setattr(starters.pool, "wait_for_start", True)
    start_call = starters.Pool.start_call
    listing = request.param == "listing"

    async def in_mode(self: starters.Pool, *a: Any, **k: Any) -> Any:
        return await start_call(self, *a, **{**k, "listing": listing})

    monkeypatch.setattr(starters.Pool, "start_call", in_mode)
    starters.pool.close()
    spawn.use_config(config.parse({"tools": {"builtins": False}}, "test", project))
    return request.param


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


# The shell's own line (a grep would read its own): "NSpid: <pid in this /proc> ... 1".
OWN_NSPID = ('while read -r k v; do [ "$k" = NSpid: ] && echo "NSpid: $v"; done '
             "< /proc/self/status")


async def test_each_mode_gives_its_children_the_proc_it_should(project: Path,
                                                                every_call_by_a_starter: str
                                                                ) -> None:
    """A call's spare mounts a /proc of the call's own PID namespace; a lister's is the
    starter's, where it sees its own processes and nothing else (hidepid, Landlock)."""
    got = await run_collect(["/bin/sh", "-c", OWN_NSPID + "; ls /proc | grep -c '^[0-9]'; "
                             "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"],
                            timeout=20, cwd=project, env=None)
    nspid, count, cmdlines = got.stdout.decode().split("\n", 2)
    levels = nspid.split()[1:]
    assert len(levels) == (2 if every_call_by_a_starter == "listing" else 1), got
    assert levels[-1] == "1" and int(count) < 6, got  # its pid 1, and only its own
    assert "kep-call-starter" not in cmdlines and "-I -S" not in cmdlines, got


# A child beside it: it says where it is (its pid in the /proc it sees) and sleeps.
SLEEPER = OWN_NSPID + " > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; sleep 1.5; echo woke"
# The one that goes after it, and after every process it cannot see: signal, environment,
# memory, ptrace (ctypes), by the pid the sleeper gave and by every pid up to 400.
ATTACKER = """
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
while not os.path.exists("{pidfile}"):
    time.sleep(0.02)
time.sleep(0.1)
target = int(open("{pidfile}").read().split()[1])
mine = open("/proc/self/status").read().split("NSpid:")[1].split()[0]
reached = []
for pid in [target, *range(1, 400)]:
    if pid != 1:  # (signals and ptrace name pids of its own namespace: 1 is itself)
        try:
            os.kill(pid, 9)
            reached.append(f"kill {{pid}}")
        except OSError:
            pass
        if libc.ptrace(16, pid, None, None) == 0:  # PTRACE_ATTACH
            reached.append(f"ptrace {{pid}}")
    if str(pid) == mine:  # (its /proc's names: its own is there)
        continue
    for what, mode in (("environ", "rb"), ("mem", "r+b")):
        try:
            open(f"/proc/{{pid}}/{{what}}", mode).close()
            reached.append(f"{{what}} {{pid}}")
        except OSError:
            pass
print("reached:", reached)
"""


async def test_a_child_cannot_reach_the_one_beside_it_nor_the_starter(project: Path) -> None:
    pidfile = project / "sleeper.pid"
    env = {**os.environ, "SLEEPER_SECRET": "s3cr3t-beside-91b4"}
    slept, attacked = await asyncio.gather(
        run_collect(["/bin/sh", "-c", SLEEPER.format(pidfile=pidfile)], timeout=20,
                    cwd=project, env=env),
        run_collect([sys.executable, "-c", ATTACKER.format(pidfile=pidfile)], timeout=20,
                    cwd=project, env=None))
    out = attacked.stdout.decode() + attacked.stderr.decode()
    assert "reached: []" in out, out
    assert "s3cr3t-beside" not in out
    assert slept.stdout.strip() == b"woke", slept


async def test_a_program_that_cannot_start_says_why_and_the_next_one_runs(project: Path) -> None:
    """One kep can run but the walls hide (under ~/.ssh): its exec fails inside them."""
    await echo(project, "warm")
    hidden = Path(os.environ["HOME"]) / ".ssh" / "prog"
    hidden.parent.mkdir(parents=True, exist_ok=True)
    hidden.write_text("#!/bin/sh\necho never\n")
    hidden.chmod(0o755)
    handed = starters.pool.handed
    got = await run_collect([str(hidden)], timeout=20, cwd=project, env=None)
    assert got.exit_code == 127 and b"never" not in got.stdout, got
    assert got.stderr.startswith(b"kep: sandbox: cannot run ") and got.stderr.count(b"\n") == 1
    assert await echo(project, "next") == b"next|"
    assert starters.pool.handed == handed + 2


async def test_a_child_holds_no_descriptor_but_its_own_three(project: Path) -> None:
    """Not kep's socket, not the starter's, not a copy of its own pipes, not another call's."""
    await echo(project, "warm")
    held = ("import os, time\ntime.sleep(0.2)\nopen_fds = []\nfor fd in range(1024):\n"
            "    try:\n        os.fstat(fd)\n        open_fds.append(fd)\n"
            "    except OSError:\n        pass\nprint(open_fds)")
    outs = await asyncio.gather(*(run_collect([sys.executable, "-I", "-c", held], timeout=20,
                                              cwd=project, env=None) for _ in range(5)))
    assert [o.stdout.strip() for o in outs] == [b"[0, 1, 2]"] * 5, outs
