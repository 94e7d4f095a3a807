"""Tools that try to take the walls down from inside (issue 23, item 9): undo a hidden path's
cover, make a user namespace to get capabilities back, remount a read-only folder writable,
write a kernel setting, see or signal another call, read what an earlier call left in /tmp.
Each as a real tool call through the runner, once per way kep starts a child (conftest.py's
every_start_path): a bwrap of its own per call, and the walls' resident starter
(security/sandbox/starters.py), which makes each call's namespaces itself, in calls mode and in
listing mode. As root (CI), the first three succeed without the walls' dropped
capabilities and their seccomp filter."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_runner import run, tool

from tuiapp.security.sandbox import spawn
from tuiapp.security.sandbox.spawn import visible_python
from tuiapp.settings import config
from tuiapp.tools.runner import Runner

SECRET = "s3cr3t-priv-7c2d"
PY = visible_python()

pytestmark = [pytest.mark.skipif(
    spawn.mechanism().missing() is not None and os.environ.get("KEP_TEST_REQUIRE_SANDBOX") != "1",
    reason=f"no sandbox here: {spawn.mechanism().missing()}"),
    pytest.mark.usefixtures("every_start_path")]


def runner(root: Path) -> Runner:
    return Runner(config.parse({"tools": {"builtins": False}}, "test", root),
                  spool_dir=root / ".spool")


async def call(project: Path, body: str, name: str = "attack") -> str:
    fin = await run(runner(project), tool(project, name, f"echo attack-ran\n{body}"))
    assert "attack-ran" in fin.result, fin.result  # an attack that never ran proves nothing
    return fin.result


def ctypes_py(code: str) -> str:
    return (f"{PY} - <<'EOF' 2>&1\nimport ctypes, os\n"
            f"libc = ctypes.CDLL(None, use_errno=True)\n{code}\nEOF")


def _mounts() -> set[str]:
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
        return {line.split()[4] for line in f}


@pytest.fixture(autouse=True)
def no_mount_left_behind(tmp_path: Path) -> Iterator[None]:
    """Where a wall failed (or runs without them: the attacks shown succeeding), a mount an
    attack made on the host is taken off again, and the test fails."""
    before = _mounts()
    yield
    made = sorted(_mounts() - before, key=len, reverse=True)
    for point in made:
        os.system(f"umount -l '{point}' 2>/dev/null")
    assert not made, f"an attack mounted on the host: {made}"


@pytest.fixture
def hidden_key(project: Path) -> Path:
    ssh = Path(os.environ["HOME"]) / ".ssh"
    ssh.mkdir(parents=True, exist_ok=True)
    (ssh / "id_ed25519").write_text(SECRET)
    return ssh / "id_ed25519"


# Ways to take a hidden folder's cover off, or to get the capabilities that would.
UNCOVER = {
    "umount": "umount -l {dir} 2>&1; cat {key} 2>&1",
    "unshare -r": "unshare -Urm sh -c 'umount -l {dir}; cat {key}' 2>&1",
    "unshare -U": "unshare -U --map-current-user -m sh -c 'umount -l {dir}; cat {key}' 2>&1",
    "ctypes unshare": ctypes_py(
        "r = libc.unshare(0x10000000 | 0x20000)\n"  # CLONE_NEWUSER | CLONE_NEWNS
        "print('userns', r, os.strerror(ctypes.get_errno()))\n"
        "libc.umount2(b'{dir}', 2)\nprint(open('{key}').read())"),
    "ctypes clone": ctypes_py(
        "stack = ctypes.create_string_buffer(65536)\n"
        "CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)\n"
        "child = CB(lambda _: 0)\n"
        "r = libc.clone(child, ctypes.c_void_p(ctypes.addressof(stack) + 65536),"
        " 0x10000000 | 17, None)\n"  # CLONE_NEWUSER | SIGCHLD
        "print('clone', r, os.strerror(ctypes.get_errno()))"),
    # a bind of / without its submounts: what the covers hide, uncovered
    "bind /": "mkdir -p /tmp/r && mount --bind / /tmp/r 2>&1; cat /tmp/r{key} 2>&1",
}


@pytest.mark.parametrize("how", list(UNCOVER), ids=list(UNCOVER))
async def test_a_hidden_folders_cover_cannot_be_taken_off(project: Path, hidden_key: Path,
                                                           how: str) -> None:
    body = UNCOVER[how].replace("{dir}", str(hidden_key.parent)).replace("{key}", str(hidden_key))
    out = await call(project, body)
    assert SECRET not in out, out
    if how.startswith("ctypes"):  # refused where it is asked, not just later
        assert ("userns -1" in out or "clone -1" in out), out


async def test_a_call_has_no_capabilities_and_no_way_to_gain_them(project: Path) -> None:
    out = await call(project, "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)' "
                              "/proc/self/status")
    caps = dict(line.split(":\t") for line in out.splitlines() if ":\t" in line)
    assert {caps[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")} == {
        "0000000000000000"}, out
    assert caps["NoNewPrivs"].strip() == "1", out


@pytest.mark.parametrize("target", [".git", "prompts/functions"])
async def test_a_read_only_folder_cannot_be_remounted_writable(project: Path,
                                                               target: str) -> None:
    (project / ".git" / "hooks").mkdir(parents=True)
    place = project / target
    planted = place / "planted"
    out = await call(project, f"mount -o remount,rw,bind {place} 2>&1; "
                              f"mount -t tmpfs none {place} 2>&1; echo evil > {planted} 2>&1")
    assert not planted.exists(), out


# Kernel settings root may write with no capability at all (the check is on the uid): one
# per place they live. (/sys/kernel/mm/... shows its value as "[always] madvise never".)
KERNEL_SETTINGS = ["/proc/sys/vm/swappiness", "/sys/module/printk/parameters/time",
                   "/sys/kernel/mm/transparent_hugepage/enabled"]


@pytest.mark.parametrize("setting", KERNEL_SETTINGS)
async def test_kernel_settings_are_read_only(project: Path, setting: str) -> None:
    if not os.path.exists(setting):
        pytest.skip(f"{setting}: not on this kernel")
    # (the same value written back: harmless even where the wall were missing)
    out = await call(project, f"v=$(sed 's/.*\\[\\(.*\\)\\].*/\\1/' {setting}); "
                              f"echo \"$v\" > {setting} && echo setting-written")
    assert "setting-written" not in out, out


async def test_what_one_call_leaves_in_tmp_the_next_does_not_see(project: Path) -> None:
    first = await call(project, "echo left-behind > /tmp/note; ls /tmp", name="same")
    second = await call(project, "cat /tmp/note 2>&1; ls -a /tmp", name="same")
    assert "note" in first
    assert "left-behind" not in second and "note" not in second.replace("/tmp/note", ""), second


async def test_calls_running_together_cannot_see_or_signal_each_other(project: Path) -> None:
    """Two calls of one tool at once (one starter, in the resident variant): neither sees the
    other's processes in /proc, nor can it signal them."""
    r = runner(project)
    sleeper = tool(project, "sleeper", "echo attack-ran; sleep 1.4242; echo woke")
    looker = tool(project, "looker", "echo attack-ran; sleep 0.5; "
                  "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done; "
                  "pkill -9 -f 1.4242 2>&1; echo looked")
    slept, looked = await asyncio.gather(run(r, sleeper, call_id="a"),
                                         run(r, looker, call_id="b"))
    assert "looked" in looked.result and "1.4242" not in looked.result, looked.result
    assert "woke" in slept.result, slept.result


async def test_a_call_is_the_first_process_of_its_own(project: Path) -> None:
    out = await call(project, "echo pid=$$; ls /proc | grep -c '^[0-9]'")
    lines = out.split()
    assert "pid=1" in lines or "pid=2" in lines, out  # the call, or bwrap's init then the call
    assert int(lines[-1]) < 10, out


async def test_a_call_runs_as_the_user_who_runs_kep(project: Path) -> None:
    """Its files are the user's, written as the user (the starter runs as the root of its own
    user namespace: a call gets the user's ids back)."""
    out = await call(project, "id -u; id -g; echo x > mine.txt")
    assert out.split()[1:3] == [str(os.getuid()), str(os.getgid())], out
    assert (project / "mine.txt").stat().st_uid == os.getuid()
