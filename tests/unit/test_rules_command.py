"""Issue 25 items 5 and 6: `kep rules test`, rules' `match` / `not_match` examples checked
at load, `deny_message`, and `expires` in kep.toml."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from tuiapp import cli
from tuiapp.project import config
from tuiapp.settings import config_writer
from tuiapp.settings.config_types import ConfigError

RULES = '''
[[approval.rules]]
tool = "execcmd"
args = '\\brm\\s+-[a-zA-Z]*r'
action = "deny"
deny_message = "use the trash tool instead"
match = [{cmd = "rm -rf build"}]
not_match = [{cmd = "rm build"}, {cmd = "echo rm -x"}]

[[approval.rules]]
tool = "^execcmd$"
args = '^\\{"cmd":"git status( -s)?"\\}$'
action = "allow"
match = [{cmd = "git status"}]
'''


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "kep.toml").write_text(RULES)
    return root


def rules_test(proj: Path, tool: str, args: str) -> int:
    return cli.main(["rules", "test", "--project", str(proj), "--trust", tool, args])


def test_exit_codes_and_the_deciding_rule(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert rules_test(proj, "execcmd", '{"cmd": "git status"}') == 0
    assert "allow: kep.toml rule 2" in capsys.readouterr().out
    assert rules_test(proj, "execcmd", '{"cmd": "make"}') == 1
    assert "ask: no rule matched" in capsys.readouterr().out
    assert rules_test(proj, "execcmd", '{"cmd": "rm -fr x"}') == 2
    out = capsys.readouterr().out
    assert "deny: kep.toml rule 1" in out and "use the trash tool instead" in out


@pytest.mark.parametrize("bad", ["{", "[1]", "1" * 2 + "x", "[" * 100_000, '"\\ud800"'])
def test_bad_arguments_are_one_line_and_exit_3(
        proj: Path, bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert rules_test(proj, "execcmd", bad) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kep: ") and "Traceback" not in err


def test_hostile_tool_names_print_as_text(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert rules_test(proj, "x\x1b]52;c;AAAA\x07" + "y" * 100_000, "{}") == 1
    assert "\x1b" not in capsys.readouterr().out


def test_a_failing_example_is_one_line_naming_the_rule_and_nothing_applies(
        proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (proj / "kep.toml").write_text(RULES.replace('not_match = [{cmd = "rm build"}',
                                                 'not_match = [{cmd = "rm -r build"}'))
    with pytest.raises(ConfigError) as e:
        config.load(proj, trust_state=_trusted(proj))
    text = str(e.value)
    assert "approval.rules[1].not_match[1]" in text and "rm -r build" in text
    assert "\n" not in text
    assert rules_test(proj, "execcmd", '{"cmd": "git status"}') == 3  # the rule set is out
    assert "not_match[1]" in capsys.readouterr().err


def test_an_example_for_a_tool_regex_must_name_the_tool(proj: Path) -> None:
    (proj / "kep.toml").write_text('[[approval.rules]]\ntool = "git_.*"\naction = "ask"\n'
                                   'match = [{x = 1}]\n')
    with pytest.raises(ConfigError, match="not one name"):
        config.load(proj, trust_state=_trusted(proj))
    (proj / "kep.toml").write_text('[[approval.rules]]\ntool = "git_.*"\naction = "ask"\n'
                                   'match = [{tool = "git_log", args = {x = 1}}]\n')
    assert config.load(proj, trust_state=_trusted(proj)).approval.rules[0].match


def test_expires_counts_from_added_and_bad_values_are_config_errors(proj: Path) -> None:
    config_writer.add_rule(proj / "kep.toml", "^ls$", "allow", source="ls {}", expires="2h")
    rule = config.load(proj, trust_state=_trusted(proj)).approval.rules[0]
    left = rule.expires_at - datetime.datetime.now(datetime.UTC).timestamp()  # type: ignore[operator]
    assert 7000 < left <= 7200
    for bad in ('expires = "soon"', 'expires = "2h"'):  # the second has no `added`
        (proj / "kep.toml").write_text(f'[[approval.rules]]\ntool = "x"\naction = "allow"\n{bad}\n')
        with pytest.raises(ConfigError, match="expires"):
            config.load(proj, trust_state=_trusted(proj))


def _trusted(proj: Path):  # type: ignore[no-untyped-def]
    from tuiapp.security import trust

    trust.trust(proj)
    return trust.check(proj)
