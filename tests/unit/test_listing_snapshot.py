"""A warm `kep functions --json` is answered from the last listing's snapshot, before kep's
config and registry are even imported; every kind of change still reaches the listing, and
machine-dependent verdicts are never answered from a snapshot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import KEP, kep_env, write_tool

PLAIN = {"type": "object", "properties": {"text": {"type": "string"}}}


def tool(path: Path, name: str, description: str = "does things") -> Path:
    spec = json.dumps([{"name": name, "description": description, "parameters": PLAIN}])
    return write_tool(path, f"#!/bin/sh\n[ \"$1\" = --list-functions ] && cat <<'EOF'\n{spec}\n"
                            "EOF\n")


class Run:
    def __init__(self, res: subprocess.CompletedProcess[str]) -> None:
        assert res.returncode == 0, res.stderr
        mods = {line.rsplit("|", 1)[-1].strip() for line in res.stderr.splitlines()
                if line.startswith("import time:")}
        self.served = ("tuiapp.tools.listing_snapshot" in mods
                       and "tuiapp.settings.config" not in mods)
        self.stdout = res.stdout
        self.stderr = "\n".join(line for line in res.stderr.splitlines()
                                if not line.startswith("import time:"))
        self.entries = json.loads(res.stdout)

    def names(self) -> list[str]:
        return [e.get("name") or Path(e["source"]).name for e in self.entries]

    def status(self, name: str) -> str:
        return next(e["status"] for e in self.entries if e.get("name", "") == name
                    or e["source"].endswith("/" + name))


def kep(proj: Path, *extra: str, cwd: Path | None = None, **env: str) -> Run:
    args = [KEP[0], "-X", "importtime", *KEP[1:], "functions", "--json", *extra]
    if cwd is None:
        args += ["--project", str(proj)]
    return Run(subprocess.run(args, capture_output=True, text=True, errors="surrogateescape",
                              timeout=60, cwd=cwd or proj,
                              env=kep_env(PYTHONDONTWRITEBYTECODE="", **env)))


def settled(proj: Path, *extra: str, **kw: object) -> Run:
    """Run until the answer comes from the snapshot (a change is declared on the first run,
    the snapshot written on the next, served on the third; on a loaded machine a listing cut
    short by its timeout is not cached, so a few more may be needed): all the same output."""
    outs = []
    for _ in range(6):
        run = kep(proj, *extra, **kw)  # type: ignore[arg-type]
        outs.append(run.stdout)
        if run.served:
            assert len(set(outs[-2:])) == 1, "the snapshot answered differently from the listing"
            return run
    raise AssertionError(f"never answered from the snapshot: {why_not(proj, **kw)}\n"
                         f"last stderr: {run.stderr!r}\noutputs: {[o[:300] for o in outs]!r}")


WHY_NOT = """
import os, sys
from tuiapp.tools import listing_snapshot as s
project = sys.argv[1] if len(sys.argv) > 1 else None
try:
    data = open(s._file(project, os.getcwd()), "rb").read()
except OSError as e:
    sys.exit(f"no snapshot ({e})")
meta, env, witnesses, _ = s._sections(data, 3)
if meta != s._meta(project, os.getcwd()):
    sys.exit("meta differs")
if env != s._env():
    old, new = set(env.split(b"\\0")), set(s._env().split(b"\\0"))
    sys.exit(f"environment differs: {sorted(old ^ new)!r}")
f = witnesses.decode(*s._ENC).split("\\0")
sys.exit(repr([(f[i], f[i + 1], s._sig(f[i])) for i in range(0, len(f), 2)
               if s._sig(f[i]) != f[i + 1]]) or "nothing differs now")
"""


def why_not(proj: Path, cwd: Path | None = None, **env: str) -> str:
    """Why the snapshot does not answer (for a failure's message): what changed since."""
    args = [sys.executable, "-c", WHY_NOT, *([] if cwd is not None else [str(proj)])]
    res = subprocess.run(args, capture_output=True, text=True, errors="surrogateescape",
                         timeout=60, cwd=cwd or proj,
                         env=kep_env(PYTHONDONTWRITEBYTECODE="", **env))
    return res.stderr.strip()[-2000:]


@pytest.mark.slow
def test_every_kind_of_change_reaches_a_snapshot_answered_listing(
        project: Path, tmp_path: Path) -> None:
    (project / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    fn = project / "prompts" / "functions"
    for name in ("alpha", "beta", "gamma"):
        tool(fn / name, name)
    (fn / "notes.txt").write_text("not a tool\n")
    assert settled(project).names() == ["alpha", "beta", "gamma"]

    # A file's content (its size and mtime change with it).
    tool(fn / "alpha", "alpha", "now does\tother things")
    run = kep(project)
    assert not run.served and run.entries[0]["description"] == "now does\tother things"
    settled(project)
    # Touched only: listed again (its declaration is asked for again).
    os.utime(fn / "beta", ns=(0, 5))
    assert not kep(project).served
    settled(project)
    # Added, removed.
    tool(fn / "delta", "delta")
    run = kep(project)
    assert not run.served and run.names() == ["alpha", "beta", "delta", "gamma"]
    (fn / "beta").unlink()
    run = kep(project)
    assert not run.served and run.names() == ["alpha", "delta", "gamma"]
    settled(project)
    # chmod -x: reported broken, not kept.
    (fn / "gamma").chmod(0o644)
    run = kep(project)
    assert not run.served and run.status("gamma") == "broken"
    settled(project)
    # A helper file that gains a #! line becomes a (non-executable, so broken) candidate.
    (fn / "notes.txt").write_text("#!/bin/sh\necho hi\n")
    run = kep(project)
    assert not run.served and run.status("notes.txt") == "broken"
    (fn / "notes.txt").unlink()
    settled(project)
    # The project's kep.toml: a new tools dir.
    more = project / "more"
    tool(more / "epsilon", "epsilon")
    (project / "kep.toml").write_text('[tools]\nbuiltins = false\ndirs = ["more"]\n')
    run = kep(project)
    assert not run.served and "epsilon" in run.names()
    settled(project)
    # Inside a configured dir too.
    tool(more / "zeta", "zeta")
    assert "zeta" in kep(project).names()
    # The user's config, the environment, another way in: listed again.
    settled(project)
    config = Path(os.environ["KEP_CONFIG_DIR"]) / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[tools]\nlist_timeout = 7\n")
    assert not kep(project).served
    listed = ["alpha", "delta", "epsilon", "zeta", "gamma"]  # gamma: broken, last
    assert settled(project).names() == listed
    assert not kep(project, KEP_SNAPSHOT_TEST="1").served
    assert not kep(project, cwd=project).served  # no --project: another snapshot
    assert settled(project, cwd=project).names() == listed


def test_project_root_and_trust_changes_are_seen(project: Path, tmp_path: Path) -> None:
    (project / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    tool(project / "prompts" / "functions" / "alpha", "alpha")
    sub = project / "sub"
    sub.mkdir()
    assert settled(project, cwd=sub).names() == ["alpha"]
    # A nearer project appears between the working directory and the old root.
    (sub / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    run = kep(project, cwd=sub)
    assert not run.served and run.names() == []
    (sub / "kep.toml").unlink()
    assert settled(project, cwd=sub).names() == ["alpha"]
    # Trust withdrawn: the project's tools are not listed, and the listing says why.
    from tuiapp.security import trust

    for record in trust.records():
        trust.forget(Path(record))
    # (kep.toml is not applied either: the built-ins are listed)
    run = kep(project, cwd=sub)
    assert not run.served and "alpha" not in run.names() and "not trusted" in run.stderr
    run = kep(project, cwd=sub)  # said on stderr: never answered from a snapshot
    assert not run.served and "not trusted" in run.stderr


@pytest.mark.slow
def test_machine_dependent_verdicts_are_checked_on_every_listing(
        project: Path, tmp_path: Path) -> None:
    (project / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    fn = project / "prompts" / "functions"
    tool(fn / "alpha", "alpha")
    interp = tmp_path / "bin" / "myinterp"
    write_tool(fn / "needs_interp", f"#!{interp}\n")
    for _ in range(3):  # a missing interpreter: never cached, so never a snapshot
        run = kep(project)
        assert not run.served and run.status("needs_interp") == "broken"
    interp.parent.mkdir()
    interp.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import json; print(json.dumps("
                      '[{"name": "needs_interp", "description": "d", "parameters": {}}]))\'\n')
    interp.chmod(0o755)
    assert kep(project).status("needs_interp") == "ok"  # the tool file itself is unchanged
    # An unset variable an llm-functions tool requires: the same.
    (project / "tools").mkdir()
    (project / "tools" / "needs_token.sh").write_text(
        "#!/usr/bin/env bash\n# @describe Use the token\n# @env KEP_SNAPSHOT_TOKEN!\n"
        "main() { :; }\n")
    for _ in range(3):
        run = kep(project)
        assert not run.served and "needs_token" not in run.names()
    assert "needs_token" in kep(project, KEP_SNAPSHOT_TOKEN="x").names()


def test_a_kep_module_edited_lists_again(project: Path, tmp_path: Path) -> None:
    """The snapshot holds kep's own output: kep's code changing (a new version, a checkout
    edited) must not be answered with the old one."""
    (project / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    tool(project / "prompts" / "functions" / "alpha", "alpha")
    settled(project)
    import tuiapp.vocab.tool_specs as model

    st = os.stat(model.__file__)
    os.utime(model.__file__, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    try:
        assert not kep(project).served
    finally:
        os.utime(model.__file__, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_mangled_snapshot_costs_nothing_but_speed(project: Path) -> None:
    (project / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    tool(project / "prompts" / "functions" / "alpha", "alpha")
    good = settled(project).stdout
    listings = Path(os.environ["KEP_CACHE_DIR"]) / "listings"
    (snap,) = listings.iterdir()
    data = snap.read_bytes()
    for bad in (b"", b"12\nshort", b"x" * 100, data[:40], b"999999999\n" + data,
                data.replace(b"\0", b"\n", 3), b"\xff\xfe" + data):
        snap.write_bytes(bad)
        run = kep(project)
        assert not run.served and run.stdout == good
    assert [p.name for p in listings.iterdir()] == [snap.name]  # no temp file left beside it


def test_hostile_paths_and_many_snapshots(tmp_path: Path) -> None:
    """A project whose path holds a tab, a newline and invalid UTF-8; 70 old snapshots of
    other directories: the newest 64 are kept, this one among them."""
    root = tmp_path / "a\tb\nc\udcff"
    (root / "prompts" / "functions").mkdir(parents=True)
    (root / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    tool(root / "prompts" / "functions" / "alpha", "alpha")
    listings = Path(os.environ["KEP_CACHE_DIR"]) / "listings"
    listings.mkdir(parents=True)
    for i in range(70):
        old = listings / f"{i:016x}.bin"
        old.write_bytes(b"stale")
        os.utime(old, ns=(i, i))
    assert settled(root).names() == ["alpha"]
    kept = sorted(p.name for p in listings.iterdir())
    assert len(kept) == 64 and f"{0:016x}.bin" not in kept
    tool(root / "prompts" / "functions" / "beta", "beta")
    assert kep(root).names() == ["alpha", "beta"]


def test_a_configured_source_made_later_is_listed(project: Path) -> None:
    (project / "kep.toml").write_text('[tools]\nbuiltins = false\n[[tools.sources]]\n'
                                      'format = "llm-functions"\npath = "later"\n')
    tool(project / "prompts" / "functions" / "alpha", "alpha")
    for _ in range(3):
        assert kep(project).names() == ["alpha"]
    (project / "later" / "tools").mkdir(parents=True)  # a source that did not exist
    (project / "later" / "tools" / "hello.sh").write_text(
        "#!/usr/bin/env bash\n# @describe Say hello\nmain() { echo hi >> \"$LLM_OUTPUT\"; }\n")
    assert kep(project).names() == ["alpha", "hello"]
