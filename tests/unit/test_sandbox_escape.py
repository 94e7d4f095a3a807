"""Tools that try to cross each wall of the sandbox, the ways an attacker would (issue 23,
item 9). Each runs as a real tool call through the runner; each crossing succeeds without the
sandbox (so these fail on a kep without it) and must be refused with it.

Skipped with the reason where the walls cannot be built (no bubblewrap, no user namespaces),
unless KEP_TEST_REQUIRE_SANDBOX=1 (CI sets it): then that is a failure."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_runner import run, tool
from tools_testutil import pid_alive

from tuiapp.security.sandbox import spawn
from tuiapp.security.sandbox.spawn import visible_python
from tuiapp.settings import config
from tuiapp.tools.runner import Runner

pytestmark = pytest.mark.usefixtures("every_start_path")

SECRET = "s3cr3t-d0-not-leak-4f1e"
PY = visible_python()  # not one under /tmp, which is private inside


@pytest.fixture(autouse=True)
def walls() -> None:
    why = spawn.mechanism().missing()
    if os.environ.get("KEP_TEST_ESCAPES_UNGUARDED") == "1":
        return  # shows each attack succeeding without the walls (run with the sandbox off)
    if why and os.environ.get("KEP_TEST_REQUIRE_SANDBOX") != "1":
        pytest.skip(f"no sandbox here: {why}")
    assert why is None, why


@pytest.fixture
def secrets_around(project: Path) -> dict[str, Path]:
    """A key in ~/.ssh, a project .env, kep's own config: all hidden."""
    home = Path(os.environ["HOME"])
    ssh = home / ".ssh"
    ssh.mkdir(parents=True, exist_ok=True)
    (ssh / "id_ed25519").write_text(SECRET)
    (project / ".env").write_text(f"TOKEN={SECRET}\n")
    conf = Path(os.environ["KEP_CONFIG_DIR"])
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "config.toml").write_text(f'# {SECRET}\n')
    return {"ssh": ssh / "id_ed25519", "env": project / ".env", "conf": conf / "config.toml"}


def runner(root: Path) -> Runner:
    """The default profile, nothing widened (not tools_testutil's)."""
    cfg = config.parse({"tools": {"builtins": False}}, "test", root)
    return Runner(cfg, spool_dir=root / ".spool")


async def call(project: Path, body: str) -> str:
    spec = tool(project, "attack", body)
    fin = await run(runner(project), spec)
    return fin.result


# ---- hidden files ----------------------------------------------------------------------------

@pytest.mark.parametrize("how", [
    "cat {ssh}",
    "ln -s {ssh} link && cat link",
    "cat ../../../../../../../../..{ssh}",
    "cat /proc/self/root{ssh}",
    "cat {conf}",
    "cat .env",
    "ln .env hard 2>/dev/null; cat hard",
    "mv .env visible.txt; cat visible.txt",
    "cp -r {sshdir} copy 2>/dev/null; cat copy/*",
])
async def test_hidden_files_stay_hidden(project: Path, secrets_around: dict[str, Path],
                                        how: str) -> None:
    body = how.format(ssh=secrets_around["ssh"], conf=secrets_around["conf"],
                      sshdir=secrets_around["ssh"].parent)
    out = await call(project, body + " 2>&1; true")
    assert SECRET not in out
    assert secrets_around["env"].read_text() == f"TOKEN={SECRET}\n"  # not moved, not emptied


async def test_kep_environment_is_not_readable(project: Path) -> None:
    """kep's own /proc entry (its environment holds the provider keys) is out of sight."""
    me = os.getpid()
    kep = Path(f"/proc/{me}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    out = await call(project, f"tr '\\0' ' ' < /proc/{me}/cmdline; "
                              f"cat /proc/{me}/environ >/dev/null && echo environ-readable; true")
    assert kep not in out and "environ-readable" not in out


async def test_walls_kept_between_calls_cover_what_appears_after_the_first(
        project: Path) -> None:
    """kep keeps each profile's walls between calls (building them cost a millisecond a
    call): a hidden folder and a `.git` made after the first call are walled at the next
    one, not left out of walls built before they existed."""
    vault = project / "vault"
    cfg = config.parse({"tools": {"builtins": False}, "sandbox": {"hidden": [str(vault)]}},
                       "test", project)
    same = Runner(cfg, spool_dir=project / ".spool")
    first = await run(same, tool(project, "first", "echo first"))
    assert first.result.strip() == "first"
    vault.mkdir()
    (vault / "key").write_text(SECRET)
    (project / ".git").mkdir()
    fin = await run(same, tool(project, "attack", "cat vault/key 2>&1; "
                                                  "echo x > .git/planted 2>&1; true"))
    assert SECRET not in fin.result
    assert not (project / ".git" / "planted").exists()


# ---- writes ----------------------------------------------------------------------------------

@pytest.mark.parametrize("target", [
    "{home}/.bashrc", "../outside.txt", ".git/hooks/pre-commit", "kep.toml",
    "prompts/functions/planted", "{config}/config.toml",
])
async def test_writes_outside_the_allowed_places_are_refused(project: Path,
                                                             target: str) -> None:
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / "kep.toml").write_text("")
    Path(os.environ["KEP_CONFIG_DIR"]).mkdir(parents=True, exist_ok=True)
    Path(os.environ["KEP_CONFIG_DIR"], "config.toml").write_text("")
    path_text = target.format(home=os.environ["HOME"], config=os.environ["KEP_CONFIG_DIR"])
    path = (project / path_text).resolve() if not path_text.startswith("/") else Path(path_text)
    before = path.read_text() if path.exists() else None
    out = await call(project, f"echo planted >> '{path_text}' 2>&1; "
                              f"ln -sf /bin/true '{path_text}.lnk' 2>&1; true")
    after = path.read_text() if path.exists() else None
    assert after == before, out
    if path.parent != project:  # beside kep.toml, in the root itself, a new file is fine
        assert not Path(str(path) + ".lnk").exists()


PLANT = f"""printf 'print("PWNED-BYTECODE")\\n' > evil.py
{PY} - <<'PY' 2>&1
import importlib.util, py_compile
target = importlib.util.cache_from_source(importlib.util.find_spec("colorsys").origin)
# An unchecked-hash pyc is loaded without looking at the source it claims to be.
py_compile.compile("evil.py", cfile=target,
                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
print("planted", target)
PY
true"""


async def test_a_call_cannot_plant_bytecode_that_a_later_call_loads(project: Path) -> None:
    """Bytecode a call writes where Python looks for compiled modules (a shared cache folder
    would be one) must never be loaded by the next call's Python (the fork server's included)."""
    planted = await call(project, PLANT)
    out = await call(project,
                     f"{PY} -c 'import colorsys, sys; print(\"prefix\", sys.pycache_prefix)'")
    assert "PWNED-BYTECODE" not in out, planted
    assert "prefix None" in out, out  # the interpreter's and the venv's compiled files count


async def test_a_tool_cannot_poison_another_tools_caches(project: Path) -> None:
    """pip installs a cached wheel as is: a tool's caches are its own, not another's."""
    plant = ('for v in "$PIP_CACHE_DIR" "$npm_config_cache" "$UV_CACHE_DIR" "$XDG_CACHE_HOME"; '
             'do mkdir -p "$v" && echo poisoned > "$v/planted" && echo "in $v"; done')
    planted = await call(project, plant)
    assert planted.count("in /") == 4, planted
    look = ('for v in "$PIP_CACHE_DIR" "$npm_config_cache" "$UV_CACHE_DIR" "$XDG_CACHE_HOME"; '
            'do cat "$v/planted" 2>/dev/null; echo "dir $v"; done')
    cache_root = Path(os.environ["KEP_CACHE_DIR"]).resolve() / "sandbox-cache"
    for name in ("victim", "../attack", "attack\n"):
        seen = (await run(runner(project), tool(project, "victim", look))).result \
            if name == "victim" else "\n".join(
                f"dir {p}" for p in [spawn.profile_for(project, tool=name).cache])
        assert "poisoned" not in seen, (name, seen)
        for line in seen.splitlines():
            folder = Path(line.removeprefix("dir ")).resolve()
            assert cache_root in folder.parents, (name, folder)
            assert not (folder / "planted").exists(), (name, folder)


async def test_the_project_and_a_private_tmp_are_writable(project: Path) -> None:
    out = await call(project, "echo ok > made.txt && echo ok > /tmp/x && cat /tmp/x")
    assert out.strip() == "ok" and (project / "made.txt").read_text() == "ok\n"


# ---- network ---------------------------------------------------------------------------------

@pytest.fixture
def listeners(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A TCP (IPv4 and IPv6), a UDP and a Unix (path and abstract) listener on the host, each
    recording whether anything reached it."""
    hits: list[str] = []
    socks: list[socket.socket] = []

    def serve(kind: str, s: socket.socket, stream: bool) -> None:
        try:
            if stream:
                conn, _ = s.accept()
                conn.close()
            else:
                s.recvfrom(512)
            hits.append(kind)
        except OSError:
            pass

    def add(kind: str, family: int, type_: int, addr: Any) -> Any:
        s = socket.socket(family, type_)
        s.bind(addr)
        if type_ == socket.SOCK_STREAM:
            s.listen(4)
        socks.append(s)
        threading.Thread(target=serve, args=(kind, s, type_ == socket.SOCK_STREAM),
                         daemon=True).start()
        return s.getsockname()

    info: dict[str, Any] = {"hits": hits}
    info["tcp"] = add("tcp", socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0))[1]
    info["udp"] = add("udp", socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", 0))[1]
    try:
        info["tcp6"] = add("tcp6", socket.AF_INET6, socket.SOCK_STREAM, ("::1", 0))[1]
    except OSError:
        info["tcp6"] = None
    info["unix"] = str(tmp_path / "service.sock")
    add("unix", socket.AF_UNIX, socket.SOCK_STREAM, info["unix"])
    abstract = f"\0kep-test-{os.getpid()}-{time.monotonic_ns()}"
    add("abstract", socket.AF_UNIX, socket.SOCK_STREAM, abstract)
    info["abstract"] = abstract[1:]
    yield info
    for s in socks:
        s.close()


def py(code: str) -> str:
    """Python run by the tool; it says so first (an attack that never ran proves nothing)."""
    return f"{PY} - <<'EOF' 2>&1; true\nprint('attack-ran', flush=True)\n{code}\nEOF"


NET_ATTACKS = {
    "tcp": "import socket; socket.create_connection(('127.0.0.1', {tcp}), 2)",
    "udp": "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
           "s.sendto(b'x', ('127.0.0.1', {udp}))",
    "dns": "import socket, struct; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
           "s.sendto(struct.pack('>HHHHHH',1,256,1,0,0,0)+b'\\x07example\\x03com\\x00\\x00\\x01"
           "\\x00\\x01', ('127.0.0.1', {udp}))",
    "tcp6": "import socket; socket.create_connection(('::1', {tcp6}), 2)",
    "unix": "import socket; s=socket.socket(socket.AF_UNIX); s.connect({unix!r})",
    "abstract": "import socket; s=socket.socket(socket.AF_UNIX); s.connect('\\0' + {abstract!r})",
    "ctypes": "import ctypes, socket, struct\n"
              "libc = ctypes.CDLL(None, use_errno=True)\n"
              "fd = libc.socket(2, 1, 0)\n"
              "addr = struct.pack('<HH4s8x', 2, socket.htons({tcp}), bytes([127,0,0,1]))\n"
              "print('rc', libc.connect(fd, addr, len(addr)), ctypes.get_errno())",
}


@pytest.mark.parametrize("attack", sorted(NET_ATTACKS))
async def test_no_socket_reaches_the_host(project: Path, listeners: dict[str, Any],
                                          attack: str) -> None:
    if listeners.get(attack if attack != "dns" else "udp") is None and attack == "tcp6":
        pytest.skip("no IPv6 loopback here")
    out = await call(project, py(NET_ATTACKS[attack].format(**listeners)))
    assert "attack-ran" in out, out
    await asyncio.sleep(0.2)
    assert listeners["hits"] == []


# ---- processes -------------------------------------------------------------------------------

async def test_processes_outside_cannot_be_signalled_or_traced(project: Path) -> None:
    outside = subprocess.Popen(["sleep", "60"])  # stands for kep's watchdog, or another tool
    try:
        out = await call(project, f"kill -9 {outside.pid} 2>&1;" + py(
            "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            f"r = libc.ptrace(0x4206, {os.getpid()}, 0, 0)\n"  # PTRACE_SEIZE: never stops kep
            f"print('seized' if r == 0 else 'refused')\n"
            f"r == 0 and libc.ptrace(17, {os.getpid()}, 0, 0)"))  # PTRACE_DETACH
        time.sleep(0.2)
        assert pid_alive(outside.pid)
        assert "attack-ran" in out and "seized" not in out
    finally:
        outside.kill()
        outside.wait()


@pytest.mark.parametrize("start", ["setsid", "env -i setsid"])
async def test_nothing_the_call_started_outlives_it(project: Path, start: str) -> None:
    """A double-forked `setsid` child that keeps changing its pid (bounded: 15 s at most)."""
    beat = project / "beat"
    loop = ("i=0; while [ $i -lt 300 ]; do i=$((i+1)); echo $i >> " + str(beat) +
            "; sleep 0.05; done")
    hop = f"( {start} sh -c '{loop}' & ) ; ( {start} sh -c 'while :; do sh -c \"sleep 0.05\" & "
    hop += "wait; done' & ) &"
    await call(project, f"{hop}\necho started")
    time.sleep(0.5)
    size = beat.stat().st_size if beat.exists() else 0
    time.sleep(0.5)
    assert (beat.stat().st_size if beat.exists() else 0) == size, "something kept running"


async def test_a_fork_loop_ends_with_the_call(project: Path) -> None:
    """Fork loop bounded by the test: 2 s of forking, then the call ends."""
    beat = project / "forks"
    body = (f"setsid sh -c 'end=$(($(date +%s)+2)); while [ $(date +%s) -lt $end ]; do "
            f"( echo x >> {beat}; sleep 5 ) & sleep 0.01; done' & sleep 0.5; echo done")
    await call(project, body)
    time.sleep(0.4)
    size = beat.stat().st_size if beat.exists() else 0
    time.sleep(0.6)
    assert (beat.stat().st_size if beat.exists() else 0) == size
