"""A keprompt tool whose `#!/usr/bin/env X` names an interpreter not installed is broken only
until X is installed: installing it into a folder already on PATH is seen at the next listing,
though the tool file did not change (the verdict is never cached)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import KEP, kep_env


def functions(project: Path, path: str) -> dict[str, dict]:
    res = subprocess.run([*KEP, "functions", "--json"], capture_output=True, text=True,
                         cwd=project, env=kep_env(PATH=path), timeout=60,
                         stdin=subprocess.DEVNULL)
    assert "Traceback" not in res.stderr, res.stderr
    data = json.loads(res.stdout)
    items = data if isinstance(data, list) else data.get("tools", [])
    return {str(t.get("name") or t.get("source")): t for t in items}


@pytest.mark.slow
def test_installing_the_interpreter_is_seen_without_touching_the_tool(
        project: Path, tmp_path: Path) -> None:
    (project / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = project / "prompts" / "functions" / "greet"
    tool.write_text("#!/usr/bin/env kepinterp\n")
    tool.chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    before = json.dumps(functions(project, path))
    assert "no interpreter" in before, before
    for _ in range(2):  # the second listing may be served warm: it must not keep the verdict
        functions(project, path)
    interp = bin_dir / "kepinterp"
    interp.write_text('#!/bin/sh\necho \'[{"name": "greet", "description": "Greets", '
                      '"parameters": {"type": "object", "properties": {}}}]\'\n')
    interp.chmod(0o755)
    after = functions(project, path)
    assert "greet" in after and "no interpreter" not in json.dumps(after), after
