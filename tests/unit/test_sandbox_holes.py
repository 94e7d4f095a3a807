"""Holes in the default profile's resolution (issue 23): a writable entry a tool redirected
with a planted link, relative hidden entries resolved against kep's working folder, and a
`.env` made mid-session. Real calls through the runner, the same runner between calls (the
profile kept between them, as in a session) and a fresh one (the configuration resolved
again)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_runner import run, tool
from test_sandbox_profile import needs_walls, runner_with

from tuiapp.security.sandbox import profile, spawn, writable
from tuiapp.settings.config_types import SandboxConfig

pytestmark = pytest.mark.usefixtures("every_start_path")

SECRET = "s3cr3t-h0les-7a2c"


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the root that the sandbox shows read-only, as ~ or /etc (not under
    /tmp, which is private inside the walls: a write there would prove nothing)."""
    try:
        made = Path(tempfile.mkdtemp(prefix="kep-test-outside-", dir="/var/tmp"))
    except OSError as e:
        pytest.skip(f"no folder outside /tmp to stand for ~: {e}")
    yield made
    shutil.rmtree(made, ignore_errors=True)


@pytest.fixture
def notices(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    said: list[str] = []
    monkeypatch.setattr(spawn, "notice", said.append)
    return said


# ---- 1. writable entries redirected by a planted link ----------------------------------------

@pytest.mark.parametrize(("entry", "plant", "lands"), [
    ("build", "ln -s {out} build", "build/x"),  # the entry itself
    ("work/data", "ln -s {out} work", "work/data/x"),  # an intermediate folder
    ("cache/..", "ln -s {out}/data cache", "../x"),  # `..` after a link
])
@pytest.mark.parametrize("fresh", [False, True])
@needs_walls
async def test_a_planted_link_at_a_writable_entry_binds_nothing(
        project: Path, outside: Path, notices: list[str], entry: str, plant: str,
        lands: str, fresh: bool) -> None:
    out = outside
    (out / "data").mkdir(parents=True)
    # Entries that do not exist yet (a tool's build output): nothing is bound there, so the
    # first call can plant a link where the next call's entry is resolved.
    r = runner_with(project, writable=[entry])
    first = await run(r, tool(project, "plant", plant.format(out=out) + " 2>&1; echo planted"))
    assert "planted" in first.result
    again = runner_with(project, writable=[entry]) if fresh else r
    await run(again, tool(project, "write", f"cd {project / 'cache' if '..' in entry else project}"
                                            f" 2>/dev/null; echo {SECRET} > {lands} 2>&1; true"))
    written = [p for p in out.rglob("*") if p.is_file()]
    assert written == [], f"{entry}: the link's target was bound writable: {written}"
    assert any(entry.split("/")[0] in n and "not bound" in n for n in notices) or entry.endswith(
        ".."), notices  # `cache/..` is the root itself: nothing to refuse


def test_a_users_own_link_outside_the_root_is_followed(project: Path, tmp_path: Path) -> None:
    """An absolute entry the user named outside the root, through their own link (`/data ->
    /mnt/data`), is the folder they chose."""
    real = tmp_path / "mnt" / "data"
    real.mkdir(parents=True)
    (tmp_path / "data").symlink_to(real)
    ok, refused = writable.check([tmp_path / "data" / "."], project, None)
    assert ok == [real] and refused == []


def test_a_link_under_another_writable_entry_refuses_the_entry(tmp_path: Path,
                                                                project: Path) -> None:
    """A wall widened below a folder a tool may already write (another entry, the cache)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "evil").symlink_to(Path(os.environ["HOME"]))
    ok, refused = writable.check([shared, shared / "evil" / "x"], project, None)
    assert ok == [shared] and [e for e, _ in refused] == [shared / "evil" / "x"]


def test_a_link_loop_is_refused_not_followed_forever(project: Path) -> None:
    (project / "a").symlink_to("b")
    (project / "b").symlink_to("a")
    _, refused = writable.check([Path("/") / project.relative_to("/") / "a"], project, None)
    assert refused


# ---- 2. relative hidden entries belong to the project -----------------------------------------

def test_relative_hidden_entries_are_the_projects(project: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    profile.forget()
    prof = profile.resolve(SandboxConfig(hidden=["vault", "~/notes"]), project)
    root = Path(os.path.realpath(project))
    assert root / "vault" in prof.hidden
    assert Path(os.path.realpath(os.path.expanduser("~/notes"))) in prof.hidden
    assert elsewhere / "vault" not in prof.hidden


@needs_walls
async def test_a_relative_hidden_entry_hides_the_projects_folder(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "vault").mkdir()
    (project / "vault" / "key").write_text(SECRET)
    monkeypatch.chdir(tmp_path)  # kep started elsewhere (`kep -C DIR`)
    fin = await run(runner_with(project, hidden=["vault"]),
                    tool(project, "peek", "cat vault/key 2>&1; true"))
    assert SECRET not in fin.result


# ---- 3. a `.env` made mid-session --------------------------------------------------------------

@pytest.mark.parametrize("name", [".env", ".env.local", "sub/deeper/.env", "new/.env.production"])
@needs_walls
async def test_a_dotenv_made_after_a_call_is_hidden_from_the_next(project: Path,
                                                                   name: str) -> None:
    (project / "sub" / "deeper").mkdir(parents=True)
    r = runner_with(project)
    first = await run(r, tool(project, "first", "echo first"))
    assert first.result.strip() == "first"
    made = project / name
    made.parent.mkdir(parents=True, exist_ok=True)
    made.write_text(f"TOKEN={SECRET}\n")
    fin = await run(r, tool(project, "peek", f"cat {name} 2>&1; true"))
    assert SECRET not in fin.result


def test_in_a_large_project_a_new_dotenv_is_found_without_a_walk(tmp_path: Path) -> None:
    """1,500 folders: a `.env` made at the root or beside a known one is found at the next
    call; one made deep within ceil(folders / SLICE) calls, never by walking again."""
    from tuiapp.security.sandbox.dotenv_index import SLICE, DotenvIndex

    root = tmp_path / "big"
    for i in range(1500):
        (root / f"a{i % 5}" / f"b{i // 5 % 30}" / f"c{i // 150}").mkdir(parents=True,
                                                                       exist_ok=True)
    (root / "a1" / ".env").write_text("K=1\n")
    index = DotenvIndex(root)
    folders = len(index.folders)
    assert folders > 2 * SLICE
    for made in (root / ".env.local", root / "a1" / ".env.production", root / "a3" / ".env"):
        made.write_text(f"TOKEN={SECRET}\n")
        assert index.refresh() and made in index.files()
    deep = root / "a2" / "b7" / "c4" / ".env"
    deep.write_text(f"TOKEN={SECRET}\n")
    calls = 0
    while deep not in index.files():
        index.refresh()
        calls += 1
        assert calls <= -(-folders // SLICE), "a deep .env was not found in its turn"


def test_a_wall_widened_through_a_planted_link_is_not_bound(
        project: Path, tmp_path: Path, notices: list[str]) -> None:
    """A session answer for a path a tool named through a link it planted in a folder it may
    write (here: the root) binds nothing; a real folder outside stays widened."""
    from tuiapp.security.sandbox import walls

    (project / "door").symlink_to(Path(os.environ["HOME"]))
    real = tmp_path / "notes"
    real.mkdir()
    spawn.configure(SandboxConfig(), project)
    walls.allow_for_session("wt", project / "door" / "sub")
    walls.allow_for_session("wt", real)
    try:
        got = spawn.profile_for(project, tool="wt").writable
    finally:
        walls._session.pop("wt", None)
    assert got == (real,)
    assert any("door" in n and "not bound" in n for n in notices)
