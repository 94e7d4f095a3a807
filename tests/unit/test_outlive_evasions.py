"""Nothing outlives kep, against tools that try to: one that strips kep's KEP_OWNER mark from
a `setsid` child, one that closes its stdout and ignores SIGTERM, and an MCP stdio server that
spawns children. Each is checked in the process table (by argv) 2 s after kep is ended."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import KEP, kep_env, write_tool
from test_nothing_outlives_kep import DEFINITION, all_started, assert_all_gone, marker, wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def tool(root: Path, body: str) -> None:
    write_tool(root / "prompts" / "functions" / "spawner", f"""#!/bin/sh
if [ "$1" = "--list-functions" ]; then
  echo '{DEFINITION}'
  exit 0
fi
{body}
""")
    (root / "kep.toml").write_text(
        '[tools]\nbuiltins = false\n\n[[approval.rules]]\ntool = "spawner"\naction = "allow"\n')


def start(root: Path, how: str) -> subprocess.Popen[bytes]:
    argv = ["call", "spawner", "{}"] if how == "call" else ["run", "--yes", "/call spawner {}"]
    return subprocess.Popen([*KEP, *argv], cwd=root, env=kep_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)


def end_when_ready(project: Path, proc: subprocess.Popen[bytes], mark: str, sig: int) -> None:
    """Once the tool (or server) has started every process marked `mark`, end kep with `sig`:
    kep ends without a traceback, and none of those processes is left."""
    try:
        wait_for(project / "ready", proc)
        all_started(mark)
        proc.send_signal(sig)
        proc.wait(10)
        assert b"Traceback" not in proc.stderr.read()  # type: ignore[union-attr]
        assert_all_gone(mark)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("how", ["call", "run"])
def test_a_child_that_drops_the_mark_and_leaves_the_group_is_killed(
        project: Path, how: str, sig: int) -> None:
    mark = marker()
    tool(project, f"""env -u KEP_OWNER setsid sleep {mark} </dev/null >/dev/null 2>&1 &
env -i setsid sh -c 'sleep {mark} & sleep {mark}' </dev/null >/dev/null 2>&1 &
touch "{project}/ready"
sleep {mark}""")
    proc = start(project, how)
    end_when_ready(project, proc, mark, sig)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_tool_that_closes_its_output_and_ignores_sigterm_is_killed(project: Path,
                                                                     sig: int) -> None:
    mark = marker()
    tool(project, f"""trap '' TERM HUP
exec >&- 2>&-
sleep {mark} &
setsid sleep {mark} &
setsid sh -c 'trap "" TERM; sleep {mark} & sleep {mark}' </dev/null &
touch "{project}/ready"
sleep {mark}""")
    proc = start(project, "run")
    end_when_ready(project, proc, mark, sig)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP])
def test_an_mcp_server_and_its_children_are_gone(project: Path, sig: int) -> None:
    mark = marker()
    server = project / "server.sh"
    # An MCP stdio server that starts helpers (one in a session of its own), then never
    # answers: kep run waits for it, and is ended meanwhile.
    server.write_text(f"""#!/bin/sh
sleep {mark} &
setsid sleep {mark} </dev/null >/dev/null 2>&1 &
setsid sh -c 'sleep {mark} & exit 0' </dev/null >/dev/null 2>&1 &
touch "{project}/ready"
exec sleep {mark}
""")
    server.chmod(0o755)
    (project / "kep.toml").write_text(
        f'[tools]\nbuiltins = false\n\n[mcp.servers.slow]\ncommand = "{server}"\n'
        'startup_timeout = 60\n')
    proc = subprocess.Popen([*KEP, "run", "use the slow server"], cwd=project, env=kep_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    end_when_ready(project, proc, mark, sig)
