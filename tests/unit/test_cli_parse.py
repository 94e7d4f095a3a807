"""The CLI parses with only the subcommands named on the command line (the whole parser costs
more than a warm `kep functions`); every argv must come out exactly as the whole parser reads
it, errors and help included."""

from __future__ import annotations

import pytest

from tuiapp import cli

ARGVS = [
    ["functions", "--json"],
    ["functions", "--json", "--project", "/tmp/x"],
    ["--project", "functions", "run", "hi"],  # a command's name as an option's value
    ["run", "--model", "x", "functions"],  # ... and as a positional of another command
    ["--continue", "--model", "offline"],
    ["-c"],
    [],
    ["sessions", "list", "--all"],
    ["sessions"],
    ["sessions", "export", "abc", "--format", "json", "-o", "out"],
    ["mcp", "serve", "--allow-ask"],
    ["config", "show"],
    ["call", "echo", "text=hi\tthere", "functions"],
    ["--set", "a=b", "--set", "c=d", "run", "x"],
    ["run", "--", "-h"],
    ["new", "tool", "--format", "loki", "--lang", "bash"],
    ["trust", "--list"],
    ["run", "\x1b[2J"],
]
ERRORS = [
    ["bogus"],
    ["functions", "--bogus"],
    ["functions", "run"],
    ["mcp"],
    ["sessions", "nope"],
    ["new", "x", "--format", "nope"],
    ["--continue", "--session", "s1"],
]


def whole(argv: list[str]) -> object:
    return cli.build_parser().parse_args(argv)


def test_every_subcommand_is_known_to_the_partial_parser() -> None:
    sub = cli.build_parser()._subparsers._group_actions[0]  # type: ignore[union-attr]
    assert sorted(sub.choices) == sorted(cli.COMMANDS)


@pytest.mark.parametrize("argv", ARGVS, ids=repr)
def test_partial_parse_equals_the_whole_parse(argv: list[str]) -> None:
    assert cli.parse(argv) == whole(argv)


@pytest.mark.parametrize("argv", ERRORS, ids=repr)
def test_errors_are_the_whole_parsers(argv: list[str], capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    with pytest.raises(SystemExit) as partial:
        cli.parse(argv)
    err = capsys.readouterr().err
    with pytest.raises(SystemExit) as full:
        whole(argv)
    assert partial.value.code == full.value.code == 2
    assert err == capsys.readouterr().err and "error:" in err


@pytest.mark.parametrize("argv", [["-h"], ["functions", "--help"], ["--version"]], ids=repr)
def test_help_lists_every_subcommand(argv: list[str], capsys: pytest.CaptureFixture[str]
                                     ) -> None:
    with pytest.raises(SystemExit) as e:
        cli.parse(argv)
    out = capsys.readouterr().out
    assert e.value.code == 0 and out
    if argv == ["-h"]:
        assert all(name in out for name in cli.COMMANDS)


QUICK = [
    ["functions"],
    ["functions", "--json"],
    ["functions", "--json", "--project="],
    ["functions", "--json", "--project", "/tmp/p q"],
    ["--project", "/tmp/a", "functions", "--json"],
    ["--project", "/tmp/a", "functions", "--project", "/tmp/b"],  # the last one wins
    ["--project=/tmp/a", "functions", "--json", "--project=/tmp/b"],
    ["functions", "--project", "functions"],
    ["--project", "functions", "functions"],
    ["--trust", "functions", "--json", "--trust"],
    ["functions", "--project", "dir\twith\ttabs\nand a newline"],
]
NOT_QUICK = [
    ["functions", "--js"],  # an abbreviation argparse accepts
    ["--json", "functions"],  # an error
    ["functions", "--watch"],
    ["functions", "--json", "extra"],
    ["functions", "--project"],
    ["functions", "--project", "-x"],
    ["functions", "functions"],
    ["run", "functions"],
    ["--model", "functions"],
    ["--project", ""],
    ["functions", "-h"],
    [],
]


@pytest.mark.parametrize("argv", QUICK, ids=repr)
def test_the_quick_functions_parse_equals_argparse(argv: list[str]) -> None:
    quick = cli.quick_parse(argv)
    assert quick is not None
    assert vars(quick) == vars(whole(argv))


@pytest.mark.parametrize("argv", NOT_QUICK, ids=repr)
def test_anything_else_goes_to_argparse(argv: list[str]) -> None:
    assert cli.quick_parse(argv) is None
