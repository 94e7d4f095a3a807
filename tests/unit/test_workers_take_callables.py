"""Every worker kep starts is handed a function, never a coroutine already made: a worker that
never runs (the app quits first, or an exclusive one replaces it before it starts) leaves a
made coroutine unawaited, and Python prints "coroutine … was never awaited" on the way out
(it did after a quit in the first moments, for the session-start hooks). Checked for every
`run_worker` call in the package, not a list."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "tuiapp"


def _made_coroutines() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "run_worker" and node.args):
                continue
            work = node.args[0]
            if isinstance(work, ast.Call) and not (
                    isinstance(work.func, ast.Name) and work.func.id == "partial"):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: "
                             f"{ast.unparse(work)}")
    return found


def test_every_run_worker_gets_a_function_not_a_made_coroutine() -> None:
    assert _made_coroutines() == []


def test_the_check_sees_a_made_coroutine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "tuiapp" / "ui" / "bad.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("def f(app):\n    app.run_worker(go(1), group='x')\n"
                   "    app.run_worker(partial(go, 1))\n    app.run_worker(go)\n")
    monkeypatch.setattr(__name__ + ".PACKAGE", tmp_path / "tuiapp")
    assert _made_coroutines() == ["tuiapp/ui/bad.py:2: go(1)"]
