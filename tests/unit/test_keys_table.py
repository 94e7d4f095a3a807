"""`[keys]` in the user config: every action by name, checked at start (one line per
problem, the default kept, kep still starts); a project's kep.toml cannot move them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tuiapp.project import config as project_config
from tuiapp.settings import paths
from tuiapp.ui import keys


@pytest.fixture(autouse=True)
def defaults() -> Iterator[None]:
    yield
    keys.apply({})


def test_a_moved_key_is_in_force() -> None:
    assert keys.apply({"approve": "j", "toggle_panes": "f10", "external_editor": "ctrl+e"}) == []
    assert keys.key("approve") == "j" and keys.key("deny") == "n"
    assert keys.changed() == {"toggle_panes": "f10"}  # Textual's keymap: bindings only
    assert "approve j (default y)" in keys.moved()


def test_swapping_two_keys_is_allowed() -> None:
    assert keys.apply({"approve": "n", "deny": "y"}) == []
    assert (keys.key("approve"), keys.key("deny")) == ("n", "y")


@pytest.mark.parametrize("table, says", [
    ({"aprove": "j"}, "unknown action `aprove` (ignored); did you mean `approve`?"),
    ({"approve": "n"}, "'n' is taken twice (approve, deny): approve keeps 'y'"),
    ({"retry": "ctrl+n"}, "'ctrl+n' is taken twice (retry, new_session): retry keeps"),
    ({"help": "ctrl+\x1b[31m"}, "a key no terminal can send"),
    ({"help": "nonsense"}, "a key no terminal can send"),
    ({"help": "ctrl+ctrl+a"}, "a key no terminal can send"),
    ({"help": ""}, "a key no terminal can send"),
    ({"help": "f1\tf2"}, "a key no terminal can send"),
    ({"retry": "r"}, "a character alone is typing in the message box"),
    ({"approve": "jj"}, "expected one character"),
    ({"approve": "7"}, "expected one character that is not a digit"),
    ({"approve": 7}, 'expected a key such as "y"'),
    ({"external_editor": "ctrl+x ctrl+e ctrl+s"}, "expected one key or two"),
])
def test_each_problem_is_one_line_and_the_default_stays(table: dict[str, object],
                                                         says: str) -> None:
    (line,) = keys.apply(table)
    assert says in line and "\n" not in line and "\x1b" not in line
    for name in table:
        if name in keys.ACTIONS:
            assert keys.key(name) == keys.ACTIONS[name].default


def test_the_same_key_in_different_places_is_fine() -> None:
    # c cancels in a tool pane and checks in the functions panel; a rules screen's d
    # is not the approval's d.
    assert keys.apply({}) == []
    assert keys.apply({"pane_cancel": "x", "functions_check": "x"}) == []


def test_keys_come_from_the_user_config_only(tmp_path: Path) -> None:
    user = paths.user_config_file()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('[keys]\napprove = "j"\n')
    root = tmp_path / "proj"
    (root / "prompts").mkdir(parents=True)
    (root / "kep.toml").write_text('[keys]\napprove = "Enter"\ndeny = "y"\n')
    cfg = project_config.load(root)
    assert cfg.keys == {"approve": "j"}
    assert any("[keys] ignored" in w for w in cfg.warnings)


def test_a_bad_keys_table_does_not_stop_kep(tmp_path: Path) -> None:
    user = paths.user_config_file()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('keys = "j"\n')
    root = tmp_path / "proj"
    (root / "prompts").mkdir(parents=True)
    cfg = project_config.load(root)  # not a table: one line, and kep starts
    assert cfg.keys == {}
    assert [w for w in cfg.warnings if "keys: expected a table" in w]
