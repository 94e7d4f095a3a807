"""`kep rules list [--json]` and rule_list.entries: every rule in force, in the order applied,
with its file, line and note (issue 25 item 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tuiapp import cli
from tuiapp.project import config as project_config
from tuiapp.security import trust
from tuiapp.security.rule_list import entries

PROJECT = '''[approval]

# added by you on 2026-11-26 from execcmd {"cmd":"ls"}
[[approval.rules]]
tool = "execcmd"
args = '^\\{"cmd":"ls"\\}$'
action = "allow"

[[approval.rules]]   # a comment on the header line
tool = "execcmd"
args = "^rm"
action = "deny"

[[approval.rules]]
tool = "x\\u001b\\\\[31mred"
action = "ask"
modes = ["read-only"]
'''
USER = '''[[approval.rules]]
tool = "writefile"
action = "deny"
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    root.mkdir()
    (root / "kep.toml").write_text(PROJECT)
    trust.trust(root)
    return root


def test_entries_are_in_the_order_applied_with_file_line_and_note(project: Path,
                                                                   tmp_path: Path) -> None:
    user = tmp_path / "config.toml"
    user.write_text(USER)
    approval = project_config.load(project, user).approval
    items = entries(approval, {"LLM_MCP_SKIP_CONFIRM": "git_.*"})
    # deny rules first (project's, then the user's), then allow/ask in file order
    assert [(e.action, e.line) for e in items[:4]] == [
        ("deny", 9), ("deny", 1), ("allow", 4), ("ask", 14)]
    assert items[1].file == str(user) and items[0].file == str(project / "kep.toml")
    assert items[2].note.startswith("added by you on 2026-11-26")
    assert items[0].note == ""  # a comment on the header line is not a note above it
    assert [e.kind for e in items[4:]] == ["variable", "built-in", "default"]
    assert not items[3].applies  # limited to read-only, and the mode is ask


def test_kep_rules_list_prints_every_rule_safely(project: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["rules", "list", "--project", str(project)]) == 0
    out = capsys.readouterr().out
    assert "kep.toml:4" in out and "kep.toml:9" in out and "kep.toml:14" in out
    assert "\x1b" not in out  # a rule's text is foreign: shown, never sent to the terminal
    assert "added by you on 2026-11-26" in out


def test_kep_rules_list_json_and_mode(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["rules", "list", "--json", "--mode", "read-only",
                     "--project", str(project)]) == 0
    data = json.loads(capsys.readouterr().out)
    rules = [d for d in data if d["kind"] == "rule"]
    assert [r["line"] for r in rules] == [9, 4, 14]
    assert rules[2]["tool"] == "x\x1b\\[31mred" and rules[2]["applies"] is True
    assert rules[1]["applies"] is False  # an unmarked allow rule: not in read-only mode
    assert data[-1] == {**data[-1], "kind": "default", "action": "ask", "applies": False}


def test_rules_written_inline_get_the_line_of_rules(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "kep.toml").write_text('\n[approval]\nrules = [{tool = "a", action = "ask"},\n'
                                   '  {tool = "b", action = "deny"}]\n')
    trust.trust(root)
    approval = project_config.load(root, tmp_path / "none.toml").approval
    assert [r.line for r in approval.rules] == [3, 3]


def test_five_hundred_rules_list_in_order(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "kep.toml").write_text("".join(
        f'[[approval.rules]]\ntool = "t{i}"\naction = "ask"\n' for i in range(500)))
    trust.trust(root)
    approval = project_config.load(root, tmp_path / "none.toml").approval
    items = entries(approval)
    assert [e.line for e in items[:500]] == [1 + 3 * i for i in range(500)]


def test_hooks_are_listed_after_the_rules(project: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    with (project / "kep.toml").open("a") as f:
        f.write('\n[[hooks]]\nevent = "before_tool"\nmatcher = "execcmd"\ncommand = "check"\n')
    trust.trust(project)  # a hook added since trusting is held back until trusted again
    assert cli.main(["rules", "list", "--json", "--project", str(project)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data[-1]["kind"] == "hook" and data[-1]["action"] == "before_tool"
    assert data[-1]["args"] == "check" and data[-1]["where"] == "kep.toml hook 1"
