"""The test suite writes nothing into the real home directory: not through kep's own dirs,
not through an environment a test module built at import time, not through npm."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import KEP, REAL_HOME, SESSION_HOME, kep_env
from tools_testutil import one_def, sh_tool

ENV_AT_IMPORT = kep_env()  # as test modules build theirs, before any fixture has run
WATCHED = (".cache/kep", ".config/kep", ".local/share/kep", ".local/state/kep", ".npm",
           ".cache/kep-test-npm", ".cache/kep-test-node")


def real_home_state() -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    for rel in WATCHED:
        top = REAL_HOME / rel
        if not top.exists():
            continue
        for dirpath, _dirs, files in os.walk(top):
            for name in files:
                p = Path(dirpath) / name
                try:
                    st = p.lstat()
                except OSError:
                    continue
                out[str(p)] = (st.st_size, st.st_mtime_ns)
    return out


def test_kep_run_from_an_import_time_environment_leaves_the_real_home_alone(
    project: Path,
) -> None:
    assert ENV_AT_IMPORT["HOME"] == str(SESSION_HOME) != str(REAL_HOME)
    for var in ("KEP_CONFIG_DIR", "KEP_DATA_DIR", "KEP_CACHE_DIR", "XDG_CACHE_HOME"):
        assert not ENV_AT_IMPORT[var].startswith(str(REAL_HOME) + os.sep), var
    (project / "notes.txt").write_text("hello\n")
    sh_tool(project / "prompts" / "functions" / "hello", one_def("hello"))
    before = real_home_state()
    for argv in (["functions", "--json"],
                 ["run", "--model", "offline", "--yes", "readfile notes.txt"]):
        res = subprocess.run([*KEP, *argv, "--project", str(project)], env=ENV_AT_IMPORT,
                             capture_output=True, text=True, timeout=60, cwd=project)
        assert res.returncode == 0, res.stderr
    # Other test runs on the same machine may write there (older checkouts): look only for
    # what this project leaves (declaration files are named after the tool directory).
    marker = project.parent.name[-12:]
    after = real_home_state()
    assert not [p for p in after if p not in before and marker in p]
    assert (Path(ENV_AT_IMPORT["KEP_DATA_DIR"]) / "sessions.db").exists()  # it went here
    assert list((Path(ENV_AT_IMPORT["KEP_CACHE_DIR"]) / "declarations").glob(f"*{marker}*"))
