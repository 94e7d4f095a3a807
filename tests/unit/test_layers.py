"""The house rules of ARCHITECTURE.md, checked: the layers and the no-circles rule (the
import-linter contracts in pyproject.toml, TYPE_CHECKING imports included), a top level
holding only packages, modules of at most 400 lines, and splits along a seam (no module
reaches into another's private names)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "tuiapp"
MAX_LINES = 400


def _modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "_bundled" not in p.parts)


def test_import_contracts_hold() -> None:
    linter = Path(sys.executable).with_name("lint-imports")
    if not linter.exists():
        pytest.fail("lint-imports is missing: install the test extras (pip install -e '.[test]')")
    out = subprocess.run([str(linter), "--no-cache", "--config", str(REPO / "pyproject.toml")],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def test_top_level_holds_only_the_entry_points_and_packages() -> None:
    loose = sorted(p.name for p in PKG.iterdir()
                   if p.is_file() and p.suffix == ".py"
                   and p.name not in {"__init__.py", "__main__.py", "cli.py"})
    assert loose == [], f"modules outside a package: {loose}"


def test_modules_stay_small() -> None:
    long = {str(p.relative_to(REPO)): n for p in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"over {MAX_LINES} lines (split along a seam): {long}"


def _private_imports(path: Path) -> list[str]:
    """`from tuiapp.x import _name` where _name is not a module of the importer's own package
    (a package may keep private modules for its own members)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tuiapp"):
            for alias in node.names:
                if not alias.name.startswith("_") or alias.name.startswith("__"):
                    continue
                target = REPO.joinpath(*node.module.split("."), alias.name + ".py")
                if target.exists() and target.parent == path.parent:
                    continue
                found.append(f"{node.module}.{alias.name}")
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    """A split along a seam leaves each half a public face: neither reaches for `_name`."""
    offenders = {str(p.relative_to(REPO)): names for p in _modules()
                 if (names := _private_imports(p))}
    assert offenders == {}


def test_a_private_import_is_seen(tmp_path: Path) -> None:
    bad = tmp_path / "m.py"
    bad.write_text("from tuiapp.settings.config import _price_table\n")
    assert _private_imports(bad) == ["tuiapp.settings.config._price_table"]
