"""[sandbox] settings (trust-gated), the walls named in results, the fallback where the kernel
can't build them, and `kep sandbox`."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from test_runner import run, tool

from tuiapp.project import config as project_config
from tuiapp.security import trust
from tuiapp.security.sandbox import spawn
from tuiapp.security.sandbox.none import NoSandbox
from tuiapp.security.sandbox.spawn import visible_python
from tuiapp.settings import config
from tuiapp.settings.config_types import ConfigError
from tuiapp.tools.runner import Runner
from tuiapp.vocab.trust_state import TrustState

needs_walls = pytest.mark.skipif(
    spawn.mechanism().missing() is not None and os.environ.get("KEP_TEST_REQUIRE_SANDBOX") != "1",
    reason=f"no sandbox here: {spawn.mechanism().missing()}")


def runner_with(root: Path, **sandbox: object) -> Runner:
    cfg = config.parse({"tools": {"builtins": False}, "sandbox": sandbox}, "test", root)
    return Runner(cfg, spool_dir=root / ".spool")


def test_a_projects_sandbox_table_counts_only_while_trusted(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / "prompts" / "functions").mkdir(parents=True)
    (root / "kep.toml").write_text('[sandbox]\nnetwork = "on"\n')
    untrusted = TrustState(str(root.resolve()), trusted=False)
    assert project_config.load(root, trust_state=untrusted).sandbox.network == "ask"
    trust.trust(root)
    assert project_config.load(root).sandbox.network == "on"
    (root / "kep.toml").write_text('[sandbox]\nnetwork = "on"\nwritable = ["~"]\n')
    held = project_config.load(root)  # gained after it was trusted: held back
    assert held.sandbox.network == "on" and held.sandbox.writable == ()  # only the new key
    assert any(g.startswith("[sandbox] writable") for g in held.trust.gained)


@pytest.mark.parametrize("table", [
    {"network": "maybe"}, {"network": ["a b"]}, {"network": [1]}, {"writable": "~/x"},
    {"writable": ["ok", "bad\0"]}, {"enabled": "no"}, {"tools": {"x": {"network": "\t"}}},
])
def test_bad_sandbox_settings_are_one_clear_error(tmp_path: Path, table: dict) -> None:
    with pytest.raises(ConfigError) as e:
        config.parse({"sandbox": table}, "kep.toml", tmp_path)
    assert "sandbox" in str(e.value) and "\n" not in str(e.value)


@needs_walls
async def test_a_denied_write_says_which_wall(project: Path) -> None:
    # (outside /tmp, which is private inside: a write there lands in the sandbox's own /tmp)
    target = Path("/var/tmp") / f"kep-sandbox-test-{os.getpid()}"
    spec = tool(project, "w", f"echo x >> {target}")
    try:
        fin = await run(runner_with(project), spec)
    finally:
        target.unlink(missing_ok=True)
    assert fin.status == "failed"
    assert f"sandbox: write outside the project denied: {target}" in fin.result
    spec = tool(project, "g", "echo x >> prompts/functions/new")
    fin = await run(runner_with(project), spec)
    assert "sandbox: write to a read-only part of the project denied" in fin.result


@needs_walls
async def test_writable_and_per_tool_network_widen_the_walls(project: Path,
                                                             tmp_path: Path) -> None:
    extra = tmp_path / "notes"
    extra.mkdir()
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    hits: list[int] = []

    def answer() -> None:
        conn, _ = srv.accept()
        hits.append(1)
        conn.recv(4096)
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")
        conn.close()

    threading.Thread(target=answer, daemon=True).start()
    port = srv.getsockname()[1]
    # "on" lets the tool reach any host through kep's proxy (HTTP_PROXY is set for it)
    body = (f"echo hi > {extra}/n.txt; {visible_python()} -c \"import urllib.request as u; "
            f"u.urlopen('http://127.0.0.1:{port}/', timeout=5)\"")
    r = runner_with(project, writable=[str(extra)], tools={"wide": {"network": "on"}})
    fin = await run(r, tool(project, "wide", body))
    srv.close()
    assert fin.status == "ok", fin.result
    assert (extra / "n.txt").read_text() == "hi\n" and hits == [1]
    fin = await run(r, tool(project, "narrow", body.replace("echo hi >", "true")))
    assert fin.status == "failed"  # the same connect, by a tool the rule does not name


async def test_where_walls_cant_be_built_kep_says_so_once_and_runs(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    monkeypatch.setattr(spawn._state, "mechanism", NoSandbox("bubblewrap is not installed"))
    monkeypatch.setattr(spawn._state, "warned", False)
    monkeypatch.setattr(spawn, "notice", said.append)
    r = runner_with(project)
    for name in ("a", "b"):
        fin = await run(r, tool(project, name, "echo ran"))
        assert fin.result == "ran"
    assert len(said) == 1 and "bubblewrap is not installed" in said[0] and "\n" not in said[0]


async def test_required_refuses_to_run_without_walls(project: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spawn._state, "mechanism", NoSandbox("bubblewrap is not installed"))
    monkeypatch.setattr(spawn, "notice", lambda line: None)
    mark = tmp_path / "ran"
    fin = await run(runner_with(project, required=True), tool(project, "t", f"touch {mark}"))
    assert fin.status == "failed" and "sandbox required" in fin.result
    assert not mark.exists()


def kep(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tuiapp", *argv], cwd=root, text=True,
                          capture_output=True, timeout=120, check=False)


def test_kep_sandbox_explain_and_run(project: Path) -> None:
    trust.trust(project)
    done = kep(project, "sandbox", "--explain")
    assert done.returncode == 0, done.stderr
    assert "mechanism: " in done.stdout and ".ssh" in done.stdout
    assert f"writable: {project.resolve()} (the project root)" in done.stdout
    done = kep(project, "sandbox", "--", "sh", "-c", "echo out; exit 3")
    assert done.returncode == 3 and done.stdout == "out\n"
    assert done.stderr.startswith(("sandbox: ", "mechanism: "))
    done = kep(project, "sandbox", "--", "no-such-command-kep")
    assert done.returncode == 127 and done.stderr.count("\n") <= 3


async def test_listers_starting_together_probe_the_sandbox_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-time probe is a whole sandboxed run: listers and calls that start together
    wait for one probe, not one each (six ran at the start of a listing of 20 shell tools)."""
    import asyncio
    import time

    probes: list[int] = []

    def slow_probe(mech: object) -> None:
        probes.append(1)
        time.sleep(0.2)

    monkeypatch.setattr(spawn._state, "mechanism", None)
    monkeypatch.delenv("KEP_SANDBOX_MECHANISM", raising=False)
    monkeypatch.setattr(spawn, "_probe", slow_probe)
    monkeypatch.setattr(spawn.Bubblewrap, "missing", lambda self: None)
    await asyncio.gather(*(spawn._ensure_probed() for _ in range(8)))
    assert len(probes) == 1
    assert spawn._state.mechanism is not None and spawn._state.mechanism.name == "bubblewrap"
