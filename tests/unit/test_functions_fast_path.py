"""`kep functions` on an unchanged project answers from the cache with no process and no event
loop; any change still reaches the listing; a killed discovery leaves nothing running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import KEP, PYCACHE, kep_env, write_tool
from tools_testutil import PY, wait_gone

from tuiapp import __version__

ENV = kep_env(
    PYTHONDONTWRITEBYTECODE="",
    PYTHONPYCACHEPREFIX=PYCACHE,
)
PLAIN = {"type": "object", "properties": {"text": {"type": "string", "minLength": 1}},
         "required": ["text"], "additionalProperties": False}


def counted_tool(path: Path, name: str, log: Path) -> Path:
    """A sh tool that appends a line to `log` each time it is asked --list-functions."""
    spec = json.dumps([{"name": name, "description": f"{name}\tdoes\nthings",
                        "parameters": PLAIN}])
    return write_tool(path, f"""#!/bin/sh
if [ "$1" = "--list-functions" ]; then
  echo {name} >> '{log}'
  cat <<'EOF'
{spec}
EOF
  exit 0
fi
cat
""")


def kep_functions(proj: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KEP, *extra, "functions", "--json", "--project", str(proj)],
                          capture_output=True, text=True, env=ENV, timeout=60)


def imported(stderr: str) -> set[str]:
    return {line.rsplit("|", 1)[-1].strip() for line in stderr.splitlines()
            if line.startswith("import time:")}


def names(res: subprocess.CompletedProcess[str]) -> list[str]:
    assert res.returncode == 0, res.stderr
    return [e.get("name", e.get("source")) for e in json.loads(res.stdout)]


def test_warm_listing_runs_nothing_and_still_sees_every_change(
    project: Path, tmp_path: Path
) -> None:
    (project / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    # (in the project: behind the sandbox's walls a lister writes nowhere else)
    fn, log = project / "prompts" / "functions", project / "listed.log"
    for name in ("alpha", "beta", "gamma"):
        counted_tool(fn / name, name, log)
    cold = kep_functions(project)
    assert names(cold) == ["alpha", "beta", "gamma"]
    assert json.loads(cold.stdout)[0]["description"] == "alpha\tdoes\nthings"
    assert sorted(log.read_text().split()) == ["alpha", "beta", "gamma"]

    warm = subprocess.run([KEP[0], "-X", "importtime", *KEP[1:], "functions", "--json",
                           "--project", str(project)], capture_output=True, text=True,
                          env=ENV, timeout=60)
    assert warm.stdout == cold.stdout
    assert len(log.read_text().split()) == 3  # no tool was asked again
    mods = imported(warm.stderr)
    assert "tuiapp.tools.registry" in mods
    heavy = {"asyncio", "jsonschema", "textual", "tuiapp.conversation.conversation",
             "tuiapp.tools.runner",
             "tuiapp.tools.lifetime", "subprocess",
             # nor what only a table, a trust write, an allow rule or a typo needs
             "shutil", "tempfile", "hashlib", "difflib", "unicodedata"}
    assert not mods & heavy, mods & heavy

    (fn / "beta").unlink()  # removed: gone from a warm listing, nothing run
    assert names(kep_functions(project)) == ["alpha", "gamma"]
    assert len(log.read_text().split()) == 3
    counted_tool(fn / "delta", "delta", log)  # added: declared, alone
    os.utime(fn / "alpha", ns=(0, 1))  # touched: declared again
    assert names(kep_functions(project)) == ["alpha", "delta", "gamma"]
    assert sorted(log.read_text().split()[3:]) == ["alpha", "delta"]
    (fn / "gamma").chmod(0o644)  # lost its exec bit: reported, not silently kept
    out = json.loads(kep_functions(project).stdout)
    assert [e["status"] for e in out] == ["ok", "ok", "broken"]
    assert "chmod +x" in out[2]["error"]


def test_cold_listing_of_plain_schemas_does_not_import_jsonschema(project: Path) -> None:
    (project / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    counted_tool(project / "prompts" / "functions" / "one", "one", project / "log")
    write_tool(project / "prompts" / "functions" / "bad", """#!/bin/sh
echo '[{"name": "bad", "description": "d", "parameters": {"type": "object", "required": 5}}]'
""")
    res = subprocess.run([KEP[0], "-X", "importtime", *KEP[1:], "functions", "--json",
                          "--project", str(project)], capture_output=True, text=True,
                         env=ENV, timeout=60)
    out = json.loads(res.stdout)
    assert [e["status"] for e in out] == ["ok", "broken"]
    assert out[1]["error"] == (
        "invalid schema for bad: invalid schema at required: 5 is not of type 'array'")
    # The broken one needed jsonschema for its message; the plain one alone does not.
    assert "jsonschema" in imported(res.stderr)
    (project / "prompts" / "functions" / "bad").unlink()
    os.utime(project / "prompts" / "functions" / "one", ns=(0, 2))
    res = subprocess.run([KEP[0], "-X", "importtime", *KEP[1:], "functions", "--json",
                          "--project", str(project)], capture_output=True, text=True,
                         env=ENV, timeout=60)
    assert names(res) == ["one"] and "jsonschema" not in imported(res.stderr)


def test_empty_listing_is_an_empty_json_array(project: Path) -> None:
    (project / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    for _ in range(2):  # cold, then warm
        res = kep_functions(project)
        assert res.returncode == 0 and json.loads(res.stdout) == []


def test_version_answers_without_loading_kep(tmp_path: Path) -> None:
    res = subprocess.run([KEP[0], "-X", "importtime", *KEP[1:], "--version"],
                         capture_output=True, text=True, env=ENV, timeout=60)
    assert res.returncode == 0 and res.stdout.startswith("kep ")
    assert {m for m in imported(res.stderr) if m.startswith("tuiapp")} == {"tuiapp", "tuiapp.cli"}
    res = subprocess.run([*KEP, "--vers"], capture_output=True, text=True, env=ENV, timeout=60)
    assert (res.returncode, res.stdout) == (0, f"kep {__version__}\n")  # argparse's way too


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killing_a_cold_discovery_leaves_no_tool_running(
    project: Path, tmp_path: Path, sig: int
) -> None:
    """Python tools (through the fork server) and sh tools hang in --list-functions with
    background children; kep is killed mid-discovery; every one of them goes."""
    (project / "kep.toml").write_text("[tools]\nbuiltins = false\ntimeout = 60\n")
    fn = project / "prompts" / "functions"
    for i in range(3):
        write_tool(fn / f"py{i}", f"""#!{PY}
import os, subprocess, time
p = subprocess.Popen(["sleep", "120"], start_new_session=True)
open({str(tmp_path)!r} + "/py{i}.pids", "w").write(f"{{os.getpid()}} {{p.pid}}")
time.sleep(120)
""")
    write_tool(fn / "sh0", f"""#!/bin/sh
setsid sleep 120 &
echo "$$ $!" > {tmp_path}/sh0.pids
sleep 120
""")
    # Without the walls (the fallback where the kernel can't build them): the tools' pids are
    # read from outside, and inside the walls a pid is the sandbox's own; with them, the PID
    # namespace ends everything (tests/unit/test_sandbox_escape.py).
    proc = subprocess.Popen([*KEP, "functions", "--project", str(project)],
                            env={**ENV, "KEP_SANDBOX_MECHANISM": "none"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    files = [tmp_path / f"{n}.pids" for n in ("py0", "py1", "py2", "sh0")]
    deadline = time.monotonic() + 30
    while not all(f.exists() and len(f.read_text().split()) == 2 for f in files):
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
        time.sleep(0.05)
    pids = [int(p) for f in files for p in f.read_text().split()]
    proc.send_signal(sig)
    proc.wait(10)
    left = [p for p in pids if not wait_gone(p, 5.0)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert left == [], f"{len(left)} of {len(pids)} processes outlived `kep functions`"
    assert sys.platform.startswith("linux")
