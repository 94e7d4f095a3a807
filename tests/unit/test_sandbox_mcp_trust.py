"""`kep mcp serve` started by kep as an MCP server runs inside the walls, where kep's own
folders are hidden. It reads its project's trust decision from the one file shown to it,
read-only: the trust records. Nothing else of kep's folders, and no tool call sees them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_tool

from tuiapp.security import trust
from tuiapp.security.sandbox import spawn
from tuiapp.settings import config, paths

pytestmark = pytest.mark.skipif(
    spawn.mechanism().missing() is not None and os.environ.get("KEP_TEST_REQUIRE_SANDBOX") != "1",
    reason=f"no sandbox here: {spawn.mechanism().missing()}")

PROBE = """
import sys
for path in sys.argv[1:]:
    try:
        open(path).read()
        print(path, "read")
    except OSError as e:
        print(path, "refused", e.errno)
try:
    open(sys.argv[1], "a").write("x")
    print("written")
except OSError:
    print("not written")
"""


def run_as(kind: str, project: Path, *argv: str, python: str | None = None
           ) -> subprocess.CompletedProcess[str]:
    spawn.use_config(config.parse({"tools": {"builtins": False}}, "test", project))
    proc = spawn.popen([python or spawn.visible_python(), *argv], kind=kind, cwd=project,  # type: ignore[arg-type]
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_an_mcp_server_reads_the_trust_records_and_nothing_else_of_keps(project: Path) -> None:
    trust.trust(project)
    records = trust.records_file()
    assert records.is_file()
    secret = paths.state_dir() / "other-state.json"
    secret.write_text("{}")
    keys = paths.config_dir() / "config.toml"
    keys.parent.mkdir(parents=True, exist_ok=True)
    keys.write_text("[providers.x]\napi_key = 'sk-secret'\n")
    done = run_as("mcp", project, "-c", PROBE, str(records), str(secret), str(keys))
    assert f"{records} read" in done.stdout, done.stderr
    assert f"{secret} refused" in done.stdout and f"{keys} refused" in done.stdout
    assert "not written" in done.stdout
    assert '"dirs"' in records.read_text() and not records.read_text().endswith("x")
    # a tool call, a listing: the trust records stay hidden from them
    for kind in ("tool", "lister"):
        done = run_as(kind, project, "-c", PROBE, str(records))
        assert f"{records} refused" in done.stdout, (kind, done.stdout, done.stderr)


def test_kep_mcp_serve_inside_the_walls_sees_its_trusted_project(
        project: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """As an MCP client (another kep) starts it: trusted, it serves; untrusted, it refuses."""
    trust.forget(tmp_path_factory.getbasetemp())  # (the suite trusts its whole temp folder)
    (project / "kep.toml").write_text('[[approval.rules]]\ntool = "hi"\naction = "allow"\n')
    write_tool(project / "prompts" / "functions" / "hi", "#!/bin/sh\necho hi\n")
    serve = ["-m", "tuiapp", "mcp", "serve", "--project", str(project)]
    # kep's own interpreter (its venv is shown inside the walls even under /tmp, where a CI
    # clone may live; python3 from PATH may not have kep installed)
    done = run_as("mcp", project, *serve, python=sys.executable)
    assert done.returncode == 2 and "is not trusted" in done.stderr, done.stderr  # not yet
    trust.trust(project)
    done = run_as("mcp", project, *serve, python=sys.executable)
    assert "is not trusted" not in done.stderr
    assert done.returncode == 0, done.stderr[-2000:]

