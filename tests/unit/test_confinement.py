"""The built-in file functions never read or write outside the project root: not through a
link met while walking, not through a planted temp file, not through a swap between the check
and the open. FIFOs, sockets and devices are skipped; spool files are private."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest
from test_builtins import call, ok
from tools_testutil import make_config

from tuiapp.settings import paths
from tuiapp.tools.runner import Runner
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

BUILTINS = paths.builtin_functions_dir()
TRIES = 2000


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("OUTSIDE-SECRET line\n")
    (out / "outside-only.txt").write_text("OUTSIDE-SECRET too\n")
    return out


def load_files() -> ModuleType:
    """The `files` executable as a module, so a race can be tried thousands of times fast."""
    sys.path.insert(0, str(BUILTINS))
    loader = importlib.machinery.SourceFileLoader("kep_files_under_test", str(BUILTINS / "files"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


# ---- links met while walking, planted temp files ------------------------------------------------


def test_grep_does_not_follow_links_found_while_walking(project: Path, outside: Path) -> None:
    (project / "inside.txt").write_text("OUTSIDE-SECRET? no, inside\n")
    (project / "leak.txt").symlink_to(outside / "secret.txt")
    (project / "leakdir").symlink_to(outside)
    out = ok(project, "files", "grep", {"pattern": "OUTSIDE-SECRET"})
    assert out == "inside.txt:1: OUTSIDE-SECRET? no, inside\n"
    out = ok(project, "files", "grep", {"pattern": "line", "glob": "*.txt"})
    assert "OUTSIDE" not in out


def test_listdir_marks_links_and_does_not_enter_them(project: Path, outside: Path) -> None:
    (project / "leakdir").symlink_to(outside)
    out = ok(project, "files", "listdir", {"recursive": True})
    assert "leakdir@" in out.splitlines() and "secret.txt" not in out
    assert ok(project, "files", "listdir", {}).splitlines() == ["leakdir@", "prompts/"]


def test_writefile_ignores_a_planted_temp_link(project: Path, outside: Path) -> None:
    target = outside / "victim.txt"
    target.write_text("untouched")
    (project / ".out.txt.kep-tmp").symlink_to(target)
    assert ok(project, "files", "writefile", {"filename": "out.txt", "content": "new"}) == (
        "created out.txt (3 bytes)\n")
    assert target.read_text() == "untouched"
    assert (project / "out.txt").read_text() == "new"
    assert not [p for p in project.iterdir() if p.name.endswith(".kep-tmp") and
                p.name != ".out.txt.kep-tmp"]  # its own temp file is gone


def test_writefile_keeps_the_mode_and_replaces_a_link_it_is_given_by_parent(
    project: Path, outside: Path
) -> None:
    (project / "run.sh").write_text("old")
    (project / "run.sh").chmod(0o750)
    ok(project, "files", "writefile", {"filename": "run.sh", "content": "new"})
    assert stat.S_IMODE((project / "run.sh").stat().st_mode) == 0o750
    res = call(project, "files", "writefile", {"filename": "prompts", "content": "x"})
    assert res.returncode == 1 and "is a directory" in res.stderr


# ---- FIFOs, sockets, devices ---------------------------------------------------------------------


def test_grep_listdir_and_readfile_skip_fifos_and_sockets(project: Path) -> None:
    os.mkfifo(project / "pipe")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(project / "sock"))
    (project / "a.txt").write_text("needle\n")
    start = time.monotonic()
    assert ok(project, "files", "grep", {"pattern": "needle"}) == "a.txt:1: needle\n"
    assert ok(project, "files", "listdir", {}).splitlines() == ["a.txt", "prompts/"]
    assert ok(project, "files", "listdir", {"recursive": True}).splitlines() == [
        "prompts/", "a.txt", "prompts/functions/"]
    res = call(project, "files", "readfile", {"filename": "pipe"})
    assert res.returncode == 1 and "not a regular file" in res.stderr
    res = call(project, "files", "grep", {"pattern": "x", "path": "pipe"})
    assert res.returncode == 1 and "not a regular file" in res.stderr
    assert time.monotonic() - start < 10  # nothing waited for a writer
    sock.close()


def test_devices_are_skipped(project: Path) -> None:
    try:
        os.mknod(project / "zero", 0o600 | stat.S_IFCHR, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("creating a device node needs privileges")
    (project / "a.txt").write_text("needle\n")
    assert ok(project, "files", "grep", {"pattern": "needle|\\x00"}) == "a.txt:1: needle\n"
    assert "zero" not in ok(project, "files", "listdir", {})
    assert "not a regular file" in call(project, "files", "readfile", {"filename": "zero"}).stderr


# ---- a swap between the check and the use ---------------------------------------------------

SWAPPER = """
import ctypes, os, sys, time
sub, outside, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
alt = sub + ".alt"
os.symlink(outside, alt)
libc = ctypes.CDLL(None, use_errno=True)
exchange = getattr(libc, "renameat2", None)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
end = time.monotonic() + seconds
while time.monotonic() < end:
    # sub is a real directory inside, then a link to outside: swapped in one step, never missing
    if exchange is None or exchange(AT_FDCWD, sub.encode(), AT_FDCWD, alt.encode(),
                                    RENAME_EXCHANGE) != 0:
        real = sub + ".real"                    # no renameat2: the same in three steps
        os.rename(sub, real); os.rename(alt, sub)
        os.rename(sub, alt); os.rename(real, sub)
"""


@pytest.fixture
def swapping(project: Path, outside: Path, monkeypatch: pytest.MonkeyPatch):
    """`sub` flips between a real directory inside the root (holding secret.txt) and a link to
    one outside, as fast as another process can flip it."""
    sub = project / "sub"
    sub.mkdir()
    (sub / "secret.txt").write_text("inside\n")
    monkeypatch.chdir(project)
    monkeypatch.delenv("KEP_ALLOW_OUTSIDE_ROOT", raising=False)
    procs: list[subprocess.Popen[bytes]] = []

    def start(seconds: float = 120) -> None:
        procs.append(subprocess.Popen([sys.executable, "-c", SWAPPER, str(sub), str(outside),
                                       str(seconds)]))
        time.sleep(0.2)

    yield start
    for p in procs:
        p.kill()
        p.wait()


def test_readfile_never_reads_outside_through_a_swap(swapping, outside: Path) -> None:
    files = load_files()
    swapping()
    seen: dict[str, int] = {}
    for _ in range(TRIES):
        try:
            got = files.readfile("sub/secret.txt")
        except (files.ToolError, OSError) as e:
            got = type(e).__name__
        seen[got] = seen.get(got, 0) + 1
        assert "OUTSIDE" not in got, seen
    assert seen.get("inside\n", 0) > 0  # the race was run: some reads got in
    assert sum(seen.values()) - seen.get("inside\n", 0) > 0, seen  # and some met a swap


def test_writefile_never_writes_outside_through_a_swap(swapping, outside: Path) -> None:
    files = load_files()
    swapping()
    wrote = 0
    for i in range(TRIES):
        try:
            files.writefile(f"sub/new{i}.txt", "x")
            wrote += 1
        except (files.ToolError, OSError):
            pass
        assert sorted(p.name for p in outside.iterdir()) == ["outside-only.txt", "secret.txt"]
    assert wrote > 0


@pytest.mark.slow
def test_grep_and_listdir_never_walk_outside_through_a_swap(swapping) -> None:
    files = load_files()
    swapping()
    for _ in range(TRIES // 4):
        for fn, args in ((files.grep, ("SECRET",)), (files.listdir, (".", None, True))):
            try:
                got = fn(*args)
            except (files.ToolError, OSError):
                continue
            assert "OUTSIDE-SECRET" not in got and "outside-only" not in got


# ---- spool files -------------------------------------------------------------------------------


async def test_spool_files_and_folders_are_private(project: Path) -> None:
    path = project / "prompts" / "functions" / "talk"
    path.write_text("#!/bin/sh\necho hello\necho oops >&2\n")
    path.chmod(0o755)
    spec = ToolSpec("talk", "talk", {"type": "object"}, "keprompt", str(path),
                    run={"exe": str(path)})
    spool_dir = project / "data" / "spool" / "session-1"
    os.umask(0o022)
    fin = await Runner(make_config(project), spool_dir=spool_dir).execute(
        spec, ToolCall("c1", "talk", {}), lambda e: None)
    assert fin.spool_path
    assert stat.S_IMODE(os.stat(fin.spool_path).st_mode) == 0o600
    assert stat.S_IMODE(spool_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((project / "data" / "spool").stat().st_mode) == 0o700
    # A link planted where the spool file goes is not followed.
    victim = project / "victim.txt"
    victim.write_text("keep")
    (spool_dir / "c2.log").symlink_to(victim)
    fin = await Runner(make_config(project), spool_dir=spool_dir).execute(
        spec, ToolCall("c2", "talk", {}), lambda e: None)
    assert victim.read_text() == "keep"


# ---- hostile trees ------------------------------------------------------------------------------


@pytest.fixture
def deep_tree(project: Path):
    """project/d/d/…/d/deep.txt, 1200 levels: deeper than Python's recursion limit, longer
    than PATH_MAX. Removed one level at a time (too deep for shutil.rmtree)."""
    fd = os.open(project, os.O_RDONLY)
    for _ in range(1200):
        os.mkdir("d", dir_fd=fd)
        nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nxt
    out = os.open("deep.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(out, b"needle deep\n")
    os.close(out)
    os.close(fd)
    yield
    while (project / "d").exists():
        for f in os.listdir(project / "d"):
            if f != "d":
                os.unlink(project / "d" / f)
        if (project / "d" / "d").exists():
            os.rename(project / "d" / "d", project / "d.next")
        os.rmdir(project / "d")
        if (project / "d.next").exists():
            os.rename(project / "d.next", project / "d")


def test_grep_and_listdir_survive_deep_wide_and_oddly_named_trees(
    project: Path, deep_tree: None
) -> None:
    wide = project / "wide"
    for i in range(500):
        (wide / f"s{i:03d}").mkdir(parents=True)
        (wide / f"s{i:03d}" / "f.txt").write_text("needle wide\n" if i == 499 else "hay\n")
    (project / "tab\there\nnewline.txt").write_text("needle odd\n")
    (project / os.fsdecode(b"bad\xffname.txt")).write_text("needle bad\n")
    (project / "long.txt").write_text("x" * 2_000_000 + " needle\n")
    hits = ok(project, "files", "grep", {"pattern": "needle", "max_results": 1000}).splitlines()
    assert hits[0] == "bad\\xffname.txt:1: needle bad"
    assert any(h.endswith("/deep.txt:1: needle deep") and h.count("d/") == 1200 for h in hits)
    assert "wide/s499/f.txt:1: needle wide" in hits
    assert any(h.startswith("long.txt:1: xxx") and len(h) < 400 for h in hits)
    assert sum("needle odd" in h for h in hits) == 1
    listing = ok(project, "files", "listdir", {"path": "wide", "recursive": True}).splitlines()
    assert len(listing) == 1000 and listing[0] == "wide/s000/"


def test_a_file_in_the_middle_of_a_path_is_named(project: Path) -> None:
    (project / "a.txt").write_text("x")
    for fn, args in (("writefile", {"filename": "a.txt/b.txt", "content": "y"}),
                     ("readfile", {"filename": "a.txt/b.txt"})):
        res = call(project, "files", fn, args)
        assert res.returncode == 1
        assert res.stderr == "Error: a.txt/b.txt: a.txt is not a directory\n"
