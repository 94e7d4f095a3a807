"""The `.gitignore` files `@` completion reads go through the one reader *confined*: one that
is a link out of the project, or to a hidden file, is not read (its lines would otherwise
decide what the list shows: a probe of a file outside the project)."""

from __future__ import annotations

from pathlib import Path

from tuiapp.conversation.mention_index import project_files_list


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x\n")
    (root / "notes.txt").write_text("y\n")
    return root


def test_a_gitignore_linked_out_of_the_project_is_not_read(tmp_path: Path) -> None:
    root = _project(tmp_path)
    outside = tmp_path / "secret.txt"
    outside.write_text("*.py\n")
    (root / ".gitignore").symlink_to(outside)
    (root / "src" / ".gitignore").symlink_to(outside)
    assert "src/a.py" in project_files_list(root)


def test_a_gitignore_linked_to_a_hidden_file_is_not_read(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / ".env").write_text("*.txt\n")
    (root / ".gitignore").symlink_to(root / ".env")
    assert "notes.txt" in project_files_list(root)


def test_a_plain_gitignore_still_steers_the_list(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / ".gitignore").write_text("*.txt\n")
    (root / "src" / ".gitignore").write_text("a.py\n")
    assert project_files_list(root) == [".gitignore", "src/.gitignore"]
