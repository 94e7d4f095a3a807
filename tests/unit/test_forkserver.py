"""The Python fork server answers --list-functions exactly as running the script would.

Each hostile script runs twice: through ForkingLister (one interpreter, a fork per script) and
through run_collect (a fresh interpreter each). Exit code, stdout, the end of stderr, timeouts,
truncation and process-group kills must match, so the fork server is only ever faster.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from tools_testutil import PY, read_pid, wait_gone

from tuiapp.security.sandbox import spawn as sandbox_spawn
from tuiapp.tools.forkserver import ForkingLister
from tuiapp.tools.formats.base import ProcResult
from tuiapp.tools.proc import run_collect

SCRIPTS = {
    "ok": 'import json\nprint(json.dumps([{"name": "ok", "description": "d"}]))',
    "exit3": "import sys\nprint('partial')\nsys.exit(3)",
    "exit_text": "import sys\nsys.exit('a message for stderr')",
    "raises": "def f():\n    raise ValueError('boom \\u00e9')\nf()",
    "identity": (
        "import os, sys, helper_mod\n"
        "print(__name__, os.path.basename(__file__), helper_mod.VALUE, sys.argv[1:])\n"
        "print(repr(sys.stdin.read()), os.getcwd() == os.environ['EXPECT_CWD'])\n"
        "print(os.getsid(0) == os.getpid(), os.getpgid(0) == os.getpid())"
    ),
    "atexit": "import atexit\natexit.register(lambda: print('bye'))\nprint('hi')",
    "unflushed": "import sys\nsys.stdout.write('no newline, never flushed')",
    "binary": "import sys\nsys.stdout.buffer.write(b'\\xff\\xfe\\x00bad utf-8\\n' * 3)",
    "flood": "import sys\nsys.stdout.write('x' * (9 << 20))",
    "stderr_flood": "import sys\nfor i in range(20000):\n    print('line', i, file=sys.stderr)",
    "syntax": "def broken(:\n    pass",
}


def write_scripts(root: Path, names: list[str]) -> dict[str, Path]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "helper_mod.py").write_text("VALUE = 42\n")  # a sibling module, no shebang
    out = {}
    for name in names:
        path = root / name
        path.write_text(f"#!{PY}\n{SCRIPTS[name]}\n")
        path.chmod(0o755)
        out[name] = path
    return out


async def both(
    scripts: dict[str, Path], cwd: Path, timeout: float = 10.0
) -> dict[str, tuple[ProcResult, ProcResult]]:
    env = {**os.environ, "EXPECT_CWD": str(cwd)}
    lister = ForkingLister(cwd, env)
    await lister.prepare(list(scripts.values()), 10.0)
    try:
        assert lister._servers, "the fork server did not start"
        forked = await asyncio.gather(*(
            lister([str(p), "--list-functions"], timeout=timeout, cwd=cwd, env=env)
            for p in scripts.values()
        ))
    finally:
        await lister.close()
    plain = await asyncio.gather(*(
        run_collect([str(p), "--list-functions"], timeout=timeout, cwd=cwd, env=env)
        for p in scripts.values()
    ))
    return dict(zip(scripts, zip(forked, plain, strict=True), strict=True))


def last_line(data: bytes) -> str:
    lines = data.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else ""


def test_forked_scripts_behave_like_fresh_interpreters(tmp_path: Path) -> None:
    scripts = write_scripts(tmp_path / "fn", list(SCRIPTS))
    results = asyncio.run(both(scripts, tmp_path))
    for name, (forked, plain) in results.items():
        assert forked.exit_code == plain.exit_code, name
        if name == "identity" and sandbox_spawn.active():
            # inside the walls a plain run is in the sandbox init's session, a forked one
            # leads its own: only the session line may differ
            assert forked.stdout.splitlines()[:-1] == plain.stdout.splitlines()[:-1]
        else:
            assert forked.stdout == plain.stdout, name
        assert forked.stdout_truncated == plain.stdout_truncated, name
        assert forked.timed_out is plain.timed_out is False, name
        assert last_line(forked.stderr) == last_line(plain.stderr), name
    assert results["identity"][0].stdout.decode().splitlines() == [
        "__main__ identity 42 ['--list-functions']", "'' True", "True True"
    ]
    assert results["exit3"][0].exit_code == 3 and results["raises"][0].exit_code == 1
    assert last_line(results["raises"][0].stderr) == "ValueError: boom é"
    assert results["flood"][0].stdout_truncated and len(results["flood"][0].stdout) == 8 << 20
    assert results["atexit"][0].stdout == b"hi\nbye\n"
    assert results["syntax"][0].exit_code == 1
    assert b"SyntaxError" in results["syntax"][0].stderr


@pytest.mark.usefixtures("unsandboxed")  # reads pids from outside
def test_a_hanging_script_and_its_children_are_killed_at_the_timeout(tmp_path: Path) -> None:
    scripts = write_scripts(tmp_path / "fn", ["ok", "exit3"])
    hang = tmp_path / "fn" / "hang"
    hang.write_text(
        f"#!{PY}\nimport subprocess, time\n"
        f"p = subprocess.Popen(['sleep', '60'])\n"
        f"open({str(tmp_path / 'child.pid')!r}, 'w').write(str(p.pid))\n"
        "print('started', flush=True)\ntime.sleep(60)\n"
    )
    hang.chmod(0o755)
    scripts["hang"] = hang

    async def go() -> ProcResult:
        lister = ForkingLister(tmp_path, os.environ)
        await lister.prepare(list(scripts.values()), 10.0)
        try:
            assert lister._servers
            return await lister([str(hang), "--list-functions"], timeout=1.0, cwd=tmp_path,
                                env=os.environ)
        finally:
            await lister.close()

    t0 = time.monotonic()
    res = asyncio.run(go())
    assert res.timed_out and res.exit_code is None and res.stdout == b"started\n"
    assert time.monotonic() - t0 < 5
    assert wait_gone(read_pid(tmp_path / "child.pid"))  # the grandchild went with its group


@pytest.mark.usefixtures("unsandboxed")  # reads pids from outside
def test_a_background_child_holding_stdout_does_not_stall_discovery(tmp_path: Path) -> None:
    scripts = write_scripts(tmp_path / "fn", ["ok", "exit3"])
    leaver = tmp_path / "fn" / "leaver"
    leaver.write_text(
        f"#!{PY}\nimport subprocess, json\n"
        f"p = subprocess.Popen(['sleep', '60'])\n"
        f"open({str(tmp_path / 'child.pid')!r}, 'w').write(str(p.pid))\n"
        'print(json.dumps([]))\n'
    )
    leaver.chmod(0o755)
    scripts["leaver"] = leaver
    t0 = time.monotonic()
    results = asyncio.run(both(scripts, tmp_path))
    forked, plain = results["leaver"]
    assert (forked.exit_code, forked.stdout) == (plain.exit_code, plain.stdout) == (0, b"[]\n")
    assert time.monotonic() - t0 < 6
    assert wait_gone(read_pid(tmp_path / "child.pid"))


@pytest.mark.parametrize("off", ["0"])
def test_kep_forkserver_0_turns_it_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, off: str
) -> None:
    monkeypatch.setenv("KEP_FORKSERVER", off)
    scripts = write_scripts(tmp_path / "fn", ["ok", "exit3", "atexit"])

    async def go() -> bool:
        lister = ForkingLister(tmp_path, os.environ)
        await lister.prepare(list(scripts.values()), 10.0)
        started = bool(lister._servers)
        await lister.close()
        return started

    assert asyncio.run(go()) is False


def test_a_checkouts_stdlib_namesake_is_not_imported_by_the_server(tmp_path: Path) -> None:
    """The server starts with -I: a project's base64.py (or json.py, selectors.py) in its cwd
    is never imported in place of the real module (issue 24: it read kep's key)."""
    for name in ("base64", "json", "selectors"):
        (tmp_path / f"{name}.py").write_text(
            "import os\nopen(os.path.join(os.getcwd(), 'PWNED'), 'a').write(__name__)\n")
    scripts = write_scripts(tmp_path / "fn", ["ok", "exit3", "identity"])

    async def go() -> ProcResult:
        lister = ForkingLister(tmp_path, {**os.environ, "EXPECT_CWD": str(tmp_path)})
        await lister.prepare(list(scripts.values()), 10.0)
        try:
            assert lister._servers, "the fork server did not start"
            return await lister([str(scripts["ok"]), "--list-functions"], timeout=10,
                                cwd=tmp_path, env=lister.env)
        finally:
            await lister.close()

    res = asyncio.run(go())
    assert res.exit_code == 0
    assert not (tmp_path / "PWNED").exists()
