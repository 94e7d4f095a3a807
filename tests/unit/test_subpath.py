"""One check for "is this path at or below that one" (security/subpath.py), used by the
sandbox's walls, the hidden list, the wall explanations and the project-file reader: on
strings (fast), after `..`, `.`, doubled and trailing slashes are normalised, and links
followed where the path comes from outside."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from tuiapp.security import hidden, project_files
from tuiapp.security.sandbox import denials
from tuiapp.security.sandbox.base import Profile
from tuiapp.security.subpath import real, under

SECURITY = Path(hidden.__file__).parent


@pytest.mark.parametrize(("path", "base", "inside"), [
    ("/root/proj", "/root/proj", True),
    ("/root/proj/a/b", "/root/proj", True),
    ("/root/proj/", "/root/proj", True),  # trailing slash on either side
    ("/root/proj", "/root/proj/", True),
    ("/root/proj/a", "/root/proj/", True),
    ("/root/project2", "/root/proj", False),  # a sibling sharing the prefix
    ("/root/project2/x", "/root/proj/", False),
    ("/root/proj2", "/root/proj", False),
    ("/root/proj/../project2", "/root/proj", False),  # `..` out of it
    ("/root/proj/../proj/x", "/root/proj", True),
    ("/root/proj/./x", "/root/proj/.", True),
    ("/root//proj//x", "/root/proj", True),
    ("/root/proj/..", "/root/proj", False),
    ("/root/.ssh/id", "/root/.ssh", True),  # dot files are plain names
    ("/root/.sshx", "/root/.ssh", False),
    ("/anything", "/", True),
    ("/", "/root", False),
])
def test_under(path: str, base: str, inside: bool) -> None:
    assert under(path, base) is inside
    assert under(Path(path), Path(base)) is inside


def test_links_are_followed_before_the_check(tmp_path: Path) -> None:
    proj, secret = tmp_path / "proj", tmp_path / "secret"
    proj.mkdir()
    secret.mkdir()
    (proj / "out").symlink_to(secret)
    assert under(proj / "out" / "x", proj)  # as a string it is inside…
    assert not under(real(proj / "out" / "x"), proj)  # …where it really is, it is not
    assert under(real(proj / "out" / "x"), secret)


def test_a_write_through_a_link_out_of_the_project_names_where_it_went(tmp_path: Path) -> None:
    proj, outside = tmp_path / "proj", tmp_path / "elsewhere"
    proj.mkdir()
    outside.mkdir()
    (proj / "out").symlink_to(outside)
    prof = Profile(root=proj)
    lines = denials.explain("sh: 1: cannot create out/x: Read-only file system", prof, proj)
    assert lines == [f"sandbox: write outside the project denied: {outside / 'x'}"]
    lines = denials.explain("sh: 1: cannot create ../proj/x: Read-only file system", prof, proj)
    assert lines == [f"sandbox: write to a read-only part of the project denied: {proj / 'x'}"]


def test_a_hidden_folder_reached_by_dotdot_or_a_link_is_hidden(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id").write_text("key")
    (home / ".sshx").mkdir()
    monkeypatch.setenv("HOME", str(home))
    proj = home / "proj"
    proj.mkdir()
    (proj / "keys").symlink_to(home / ".ssh")
    assert hidden.is_hidden(f"{proj}/../.ssh/id")
    assert hidden.is_hidden(proj / "keys" / "id")
    assert hidden.is_hidden(f"{home}/.ssh/")
    assert not hidden.is_hidden(home / ".sshx" / "id")  # a sibling sharing the prefix
    with pytest.raises(project_files.ProjectFileError, match="outside the project"):
        project_files.confined(Path(f"{proj}/../.sshx/id"), proj)
    sibling = home / "proj2"
    sibling.mkdir()
    with pytest.raises(project_files.ProjectFileError, match="outside the project"):
        project_files.confined(sibling / "f", Path(f"{proj}/"))


def test_security_has_one_subpath_check() -> None:
    """No module in tuiapp/security defines its own `_under` or asks `x in p.parents` (the
    slow way, and a second place to get wrong)."""
    found = []
    for file in SECURITY.rglob("*.py"):
        tree = ast.parse(file.read_text(), str(file))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name in ("_under", "under") \
                    and file.name != "subpath.py":
                found.append(f"{file.name}: def {node.name}")
            if isinstance(node, ast.Compare) and any(
                    isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and any(
                    isinstance(c, ast.Attribute) and c.attr == "parents"
                    for c in node.comparators):
                found.append(f"{file.name}:{node.lineno}: `in .parents`")
    assert found == [], found
    assert os.path.exists(SECURITY / "subpath.py")


@pytest.mark.parametrize("printed", [
    "cannot create /home/u/a\0b: Read-only file system",  # NUL: no file can have it
    "cannot create /home/u/" + "a" * (2 << 20) + ": Read-only file system",  # 2 MB
    "cannot create /home/u/\x1b]52;c;eA==\x07: Read-only file system",
    "cannot create \udcff/x: Read-only file system",
])
def test_hostile_paths_in_a_tools_output_get_a_line_not_a_traceback(printed: str,
                                                                    tmp_path: Path) -> None:
    lines = denials.explain(printed, Profile(root=tmp_path), tmp_path)
    assert len(lines) == 1 and lines[0].startswith("sandbox: write")
    assert real("/a/\0/../b") == Path("/a/b")
