"""Deleting and moving one rule in a config file's text (the rules screen): comments and other
settings stay as written; anything unclear leaves the file alone with one line saying why."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tuiapp.settings import rule_edit

TEXT = """model = "m"   # my model

[approval]
default = "ask"

# note A
[[approval.rules]]
tool = "a"
action = "ask"

[tools]
timeout = 3

# note B
[[approval.rules]]
tool = "b"
action = "deny"
[[approval.rules]]
tool = "c"
action = "allow\""""


def tools(path: Path) -> list[str]:
    return [r["tool"] for r in tomllib.loads(path.read_text())["approval"]["rules"]]


@pytest.fixture
def file(tmp_path: Path) -> Path:
    f = tmp_path / "kep.toml"
    f.write_text(TEXT)
    return f


def test_remove_keeps_everything_else(file: Path) -> None:
    rule_edit.remove(file, 15)  # b, with its note
    text = file.read_text()
    assert tools(file) == ["a", "c"] and "note B" not in text
    assert 'model = "m"   # my model' in text and "# note A" in text and "timeout = 3" in text


def test_swap_moves_notes_with_their_rules_and_leaves_tables_between(file: Path) -> None:
    rule_edit.swap(file, 7, 18)  # a <-> c, the last line without a newline
    assert tools(file) == ["c", "b", "a"]
    text = file.read_text()
    assert text.index("# note A") < text.index('tool = "a"')
    assert text.index('tool = "c"') < text.index("[tools]") < text.index('tool = "a"')


@pytest.mark.parametrize("line", [1, 8, 99, 0, -3])
def test_a_line_that_is_no_rule_header_changes_nothing(file: Path, line: int) -> None:
    with pytest.raises(rule_edit.EditError, match="edit the file by hand"):
        rule_edit.remove(file, line)
    assert file.read_text() == TEXT


def test_inline_rules_are_left_to_the_user(tmp_path: Path) -> None:
    f = tmp_path / "kep.toml"
    f.write_text('[approval]\nrules = [{tool = "a", action = "ask"}]\n')
    with pytest.raises(rule_edit.EditError):
        rule_edit.remove(f, 2)
    assert "tool" in f.read_text()


def test_crlf_files_and_symlinked_files(tmp_path: Path) -> None:
    real = tmp_path / "real.toml"
    real.write_bytes(TEXT.replace("\n", "\r\n").encode())
    link = tmp_path / "kep.toml"
    link.symlink_to(real)
    rule_edit.remove(link, 7)
    assert link.is_symlink() and tools(real) == ["b", "c"]
    assert b"\r\n" in real.read_bytes()


def test_a_header_inside_a_multiline_string_is_not_cut(tmp_path: Path) -> None:
    f = tmp_path / "kep.toml"
    text = ('system_prompt = """\n[[approval.rules]]\n"""\n\n'
            '[[approval.rules]]\ntool = "a"\naction = "ask"\n')
    f.write_text(text)
    with pytest.raises(rule_edit.EditError):
        rule_edit.remove(f, 5)  # two headers in the text, one rule: unclear, left alone
    assert f.read_text() == text
