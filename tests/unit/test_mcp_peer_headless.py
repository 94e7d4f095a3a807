"""Headless faces and a server's requests: `kep run` asks about sampling like a tool call
(denied without --yes or a rule, run on the current model with one), declines elicitation
with a notice; `kep call` has no model and says so. Through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import KEP, kep_env

# End to end through real kep processes and MCP servers: run by `.ci/run` (-m slow).
pytestmark = pytest.mark.slow

PEER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_peer_server.py")
ALLOW_TOOLS = '[[approval.rules]]\ntool = "peer_.*"\naction = "allow"\n'
ALLOW_SAMPLING = '[[approval.rules]]\ntool = "mcp:peer:sampling"\naction = "allow"\n'


def setup(project: Path, *rules: str) -> None:
    (project / "kep.toml").write_text(
        "[tools]\nbuiltins = false\n\n" + "\n".join(rules) +
        f'\n[mcp.servers.peer]\ncommand = {sys.executable!r}\nargs = ["{PEER}", "--hostile"]\n')


def run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KEP, "run", "--project", str(project), "--model", "offline", *args],
                          capture_output=True, text=True, env=kep_env(), timeout=90,
                          stdin=subprocess.DEVNULL)


def test_sampling_is_denied_headless_without_yes(project: Path) -> None:
    setup(project, ALLOW_TOOLS)
    out = run(project, "peer_sample {}")
    assert "Traceback" not in out.stderr
    assert "asked to sample the model" in out.stderr, out.stderr
    assert "\x1b[31m" not in out.stderr  # the server's text went through the display edge


def test_a_rule_allows_a_servers_sampling_and_the_answer_goes_back(project: Path) -> None:
    setup(project, ALLOW_TOOLS, ALLOW_SAMPLING)
    out = run(project, "--json", "peer_sample {}")
    events = [json.loads(x) for x in out.stdout.splitlines()]
    decided = [e for e in events if e["type"] == "ToolCallDecided" and "allow" in json.dumps(e)]
    assert decided, out.stdout
    (finished,) = [e for e in events if e["type"] == "ToolFinished"]
    assert finished["status"] == "ok"
    assert json.loads(finished["result"].split("```")[0] if "```" not in finished["result"]
                      else finished["result"])["model"] == "offline"


def test_yes_allows_sampling(project: Path) -> None:
    setup(project)
    out = run(project, "--yes", "peer_sample {}")
    assert out.returncode == 0, out.stderr
    assert "asked to sample" not in out.stderr


def test_elicitation_is_declined_headless_with_a_notice(project: Path) -> None:
    setup(project, ALLOW_TOOLS)
    out = run(project, "peer_elicit_form {}")
    assert "asked for input (form); declined" in out.stderr, out.stderr
    assert '"decline"' in out.stdout or "decline" in out.stderr + out.stdout


def test_kep_call_denies_sampling_and_says_why(project: Path) -> None:
    setup(project)
    out = subprocess.run([*KEP, "call", "peer_sample", "{}"], cwd=project, env=kep_env(),
                         capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    assert "asked to sample the model; denied" in out.stderr, out.stderr
    assert "\x1b[31m" not in out.stderr and "Traceback" not in out.stderr
