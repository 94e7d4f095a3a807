"""Shell-aware approval (issue 25 item 3): a command line of a shell-like tool is allowed only
when every simple command in it is; one deny denies; a line the splitter can't be sure of is
asked about, never allowed. Table-driven over hostile command lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tuiapp.project import config as project_config
from tuiapp.security.policy import decide, decide_direct, shell_argument
from tuiapp.security.shell_split import split
from tuiapp.settings import config
from tuiapp.settings.config_types import ApprovalConfig
from tuiapp.settings.paths import builtin_functions_dir
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

SHELL_FILE = str(builtin_functions_dir() / "shell")
EXECCMD = ToolSpec("execcmd", "", {"type": "object", "properties": {"cmd": {"type": "string"}}},
                   "keprompt", SHELL_FILE, run={"exe": SHELL_FILE})


def approval(*rules: dict[str, Any], default: str = "ask") -> ApprovalConfig:
    data = {"approval": {"default": default, "rules": list(rules)}}
    return config.parse(data, "kep.toml", Path("/p")).approval


def prefix_allow(prefix: str) -> dict[str, Any]:
    """A broad prefix rule, the kind users write: before shell-aware matching it also
    allowed anything chained after the prefix."""
    return {"tool": "execcmd", "action": "allow", "args": rf'^\{{"cmd":"{prefix}\b.*"\}}$'}


# Broad allow rules for harmless-looking commands: a hostile line must still not run unasked.
BROAD = approval(*(prefix_allow(p) for p in (
    "echo", "ls", "cat", "true", "git status", "git log", "head", "grep", "pwd", "cd")))


def action(rules: ApprovalConfig, cmd: str, spec: ToolSpec | None = EXECCMD) -> str:
    return decide(ToolCall("1", "execcmd", {"cmd": cmd}), rules, {}, spec=spec).action


HOSTILE: list[tuple[str, str]] = [
    ("semicolon", "echo hi; rm -rf /"),
    ("and", "echo hi && rm -rf /"),
    ("or", "echo hi || rm -rf /"),
    ("pipe into sh", "echo rm -rf / | sh"),
    ("pipe into a command", "cat x | tee ~/.bashrc"),
    ("background", "echo hi & rm -rf /"),
    ("newline", "echo hi\nrm -rf /"),
    ("subshell", "(rm -rf /)"),
    ("group", "true && { rm -rf /; }"),
    ("command substitution", "echo $(rm -rf /)"),
    ("substitution in quotes", 'echo "$(rm -rf /)"'),
    ("backticks", "echo `rm -rf /`"),
    ("process substitution in", "cat <(rm -rf /)"),
    ("process substitution out", "echo hi >(rm -rf /)"),
    ("substitution in a redirect", "ls > $(rm -rf /)"),
    ("substitution in an assignment", "X=$(rm -rf /) ls"),
    ("expansion default", "echo ${x:-$(rm -rf /)}"),
    ("redirect overwrites", "echo hi > ~/.bashrc"),
    ("redirect appends", "echo '[core] fsmonitor = evil' >> .git/config"),
    ("redirect clobber", "ls >| important"),
    ("redirect both", "ls &> important"),
    ("redirect read-write", "cat 3<> important"),
    ("redirect alone", "> important"),
    ("eval", 'eval "rm -rf /"'),
    ("eval harmless-looking", "eval ls"),
    ("source", "source ./evil.sh"),
    ("dot", ". ./evil.sh"),
    ("exec", "exec rm -rf /"),
    ("trap", "trap 'rm -rf /' EXIT"),
    ("variable as command", "X=rm; $X -rf /"),
    ("substitution as command", "$(echo rm) -rf /"),
    ("ansi-c quoted command", "$'\\x72m' -rf /"),
    ("glob as command", "/bin/r? -rf /"),
    ("brace expansion as command", "{rm,-rf,/}"),
    ("brace expansion in arguments", "echo ok; ls {-la,/etc}"),
    ("heredoc into sh", "cat <<EOF | sh\nrm -rf /\nEOF\n"),
    ("heredoc expands", "cat <<EOF\n$(rm -rf /)\nEOF\n"),
    ("herestring into bash", 'bash <<< "rm -rf /"'),
    ("sh -c with a variable", 'sh -c "$CMD"'),
    ("sh -c hiding rm", "sh -c 'echo hi; rm -rf /'"),
    ("bash -c nested three deep", "bash -c \"sh -c 'dash -c \\\"sh -c ls\\\"'\""),
    ("sh reading a script", "sh ./script.sh"),
    ("unbalanced double quote", 'echo "unbalanced'),
    ("unbalanced single quote", "echo 'unbalanced; rm -rf /"),
    ("stray paren", "echo hi)"),
    ("double semicolon", "echo hi;; rm x"),
    ("arithmetic hides a command", "echo $((1+2)); rm -rf /"),
    ("case", "case x in *) rm -rf /;; esac"),
    ("double bracket", "[[ -f x ]] && rm x"),
    ("time", "time rm x"),
    ("coproc", "coproc rm x"),
    ("function definition", "ls() { rm -rf /; }; ls"),
    ("if", "if true; then rm -rf /; fi"),
    ("for", "for f in *; do rm $f; done"),
    ("while", "while true; do rm x; done"),
    ("negation", "! rm x"),
    ("pipe both streams", "echo hi |& rm x"),
    ("line continuation", "echo hi; r\\\nm -rf /"),
    ("carriage return", "ls\r\nrm -rf /"),
    ("NUL", "echo hi\x00; rm -rf /"),
    ("escape sequence", "echo \x1b[2J; ls"),
    ("line separator", "ls\u2028rm -rf /"),
    ("sudo", "echo hi; sudo rm -rf /"),
    ("env", "env rm -rf /"),
    ("xargs", "ls | xargs rm"),
    ("find -exec", "find . -exec rm {} \\;"),
    ("nohup", "nohup rm x &"),
    ("timeout", "timeout 5 rm -rf /"),
    ("command builtin", "command rm -rf /"),
    ("busybox", "busybox rm -rf /"),
    ("quoted command name", "echo a ; 'rm' -rf /"),
    ("git after allowed git", "git status; git push --force"),
    ("500 harmless then one", "ls; " * 500 + "rm -rf /"),
    ("500 nested substitutions", "echo " + "$(" * 500 + "ls" + ")" * 500),
    ("2 MB line", "echo " + "a" * (2 * 1024 * 1024)),
    ("lone surrogate", "echo \udcff; rm -rf /"),
    ("tab for a space", "echo\thi;\trm -rf /"),
    ("only a comment", "# echo hi"),
    ("only separators", ";"),
]


@pytest.mark.parametrize(("label", "cmd"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_lines_are_never_allowed_by_broad_rules(label: str, cmd: str) -> None:
    assert action(BROAD, cmd) != "allow"


def test_the_table_is_big_and_was_allowed_before() -> None:
    """The table holds at least 50 lines, and most were allowed by the whole-line rules
    alone (as the line is decided when the tool is not known to run a command line, which
    is how kep decided every call before)."""
    assert len(HOSTILE) >= 50
    plain = ToolSpec("execcmd", "", {"type": "object"}, "keprompt", "/p/prompts/functions/x")
    whole = [c for _, c in HOSTILE if action(BROAD, c, spec=plain) == "allow"]
    assert len(whole) >= 35


UNSURE = [cmd for label, cmd in HOSTILE if not split(cmd).certain]


@pytest.mark.parametrize("cmd", UNSURE)
def test_lines_kep_cant_be_sure_of_are_asked_even_when_everything_is_allowed(cmd: str) -> None:
    everything = approval({"tool": "execcmd", "action": "allow"}, default="allow")
    assert action(everything, cmd) == "ask"


def test_enough_of_the_table_is_unsure() -> None:
    assert len(UNSURE) >= 30


ANCHORED_DENY = {"tool": "execcmd", "action": "deny", "args": r"^rm\b"}


@pytest.mark.parametrize("cmd", [
    "ls; rm x", "ls && rm x", "echo $(rm x)", "cat <(rm x)", "sh -c 'ls; rm x'",
    "eval x; rm y", "(cd /; rm x)", "echo `rm x`", "if true; then rm x; fi",
])
def test_a_deny_on_any_one_simple_command_denies_the_call(cmd: str) -> None:
    rules = approval(ANCHORED_DENY, {"tool": "execcmd", "action": "allow"})
    assert action(rules, cmd) == "deny"
    verdict = decide(ToolCall("1", "execcmd", {"cmd": cmd}), rules, {}, spec=EXECCMD)
    assert "rm " in verdict.rule  # the user sees which command was denied
    assert decide_direct(ToolCall("1", "execcmd", {"cmd": cmd}), rules, {},
                         spec=EXECCMD).action == "deny"


SPLITS = [
    ("git status", ["git status"]),
    ("git status && git log --oneline | head -5", ["git status", "git log --oneline", "head -5"]),
    ("a; b & c || d\ne", ["a", "b", "c", "d", "e"]),
    ("(a; (b)) && { c; }", ["a", "b", "c"]),
    ("echo $(a) `b` <(c)", ["echo $(a) `b` <(c)", "a", "b", "c"]),
    ("echo hi > out 2>&1", ["echo hi 2>&1", "> out"]),
    ("ls >/dev/null 2>&1", ["ls >/dev/null 2>&1"]),
    ("sh -c 'ls -la; pwd'", ["ls -la", "pwd"]),
    ("echo 'a; b' \"c && d\"", ["echo 'a; b' \"c && d\""]),
    ("ls # ; rm -rf /", ["ls"]),
]


@pytest.mark.parametrize(("cmd", "commands"), SPLITS)
def test_splits_into_the_simple_commands_bash_runs(cmd: str, commands: list[str]) -> None:
    result = split(cmd)
    assert result.certain, result.unsure
    assert sorted(result.commands) == sorted(commands)


NARROW = approval(
    {"tool": "execcmd", "action": "allow", "args": r'^\{"cmd":"git (status|log)( [\w-]+)*"\}$'},
    {"tool": "execcmd", "action": "allow", "args": r'^\{"cmd":"head -\d+"\}$'},
    {"tool": "execcmd", "action": "allow", "args": r'^\{"cmd":"ls( -[a-z]+)*( >/dev/null)?'
                                                   r'( 2>&1)?"\}$'},
    {"tool": "execcmd", "action": "allow", "args": r'^\{"cmd":"pwd"\}$'},
)


@pytest.mark.parametrize("cmd", [
    "git status", "git status && git log --oneline | head -5", "ls -la; pwd",
    "ls >/dev/null 2>&1", "sh -c 'ls -la; pwd'", "(git status)",
])
def test_lines_made_only_of_allowed_commands_are_allowed(cmd: str) -> None:
    assert action(NARROW, cmd) == "allow"


def test_the_verdict_names_the_file_and_line_of_the_rule(tmp_path: Path) -> None:
    from tuiapp.security import trust

    project = tmp_path / "p"
    project.mkdir()
    (project / "kep.toml").write_text(
        "[approval]\n\n# a comment\n[[approval.rules]]\ntool = \"execcmd\"\n"
        "args = '^rm'\naction = \"deny\"\n")
    trust.trust(project)
    rules = project_config.load(project, tmp_path / "none.toml").approval
    v = decide(ToolCall("1", "execcmd", {"cmd": "ls; rm x"}), rules, {}, spec=EXECCMD)
    assert v.action == "deny" and v.file == str(project / "kep.toml") and v.line == 4
    assert "kep.toml rule 1, line 4" in v.rule


def test_the_ask_names_the_command_that_is_not_allowed() -> None:
    v = decide(ToolCall("1", "execcmd", {"cmd": "git status; make install"}), NARROW, {},
               spec=EXECCMD)
    assert v.action == "ask" and "make install" in v.rule
    v = decide(ToolCall("1", "execcmd", {"cmd": "eval ls"}), NARROW, {}, spec=EXECCMD)
    assert v.action == "ask" and "eval" in v.rule


def test_only_kep_s_own_execcmd_is_shell_like_by_default() -> None:
    """A project tool named execcmd is not kep's: its arguments mean what it says they mean,
    so it is decided as before (asked unless a rule says otherwise)."""
    project = ToolSpec("execcmd", "", {"type": "object"}, "keprompt", "/p/prompts/functions/x")
    assert shell_argument("execcmd", approval(), project) is None
    assert shell_argument("execcmd", approval(), EXECCMD) == "cmd"
    assert action(BROAD, "echo hi; rm -rf /", spec=project) == "allow"  # whole-line rule


def test_a_rule_marks_any_tool_as_running_a_command_line() -> None:
    rules = approval(
        {"tool": "mcp_run", "action": "ask", "shell": "command"},
        {"tool": "mcp_run", "action": "allow", "args": r'^\{"command":"ls\b.*"\}$'},
    )
    def run(cmd: Any) -> str:
        return decide(ToolCall("1", "mcp_run", {"command": cmd}), rules, {}, spec=None).action
    # The ask rule (no args) matches every simple command too, and it comes first.
    assert run("ls") == "ask"
    allow_first = approval(
        {"tool": "mcp_run", "action": "allow", "args": r'^\{"command":"ls\b.*"\}$',
         "shell": "command"})
    def run2(cmd: Any) -> str:
        return decide(ToolCall("1", "mcp_run", {"command": cmd}), allow_first, {},
                      spec=None).action
    assert run2("ls -la") == "allow"
    assert run2("ls; rm -rf /") == "ask"
    assert run2(["ls", "-la"]) == "ask"  # not a command line kep can read: never allowed


def test_a_bad_shell_key_is_one_clear_config_error() -> None:
    with pytest.raises(config.ConfigError, match=r"approval.rules\[1\].shell"):
        approval({"tool": "x", "action": "ask", "shell": " "})
    with pytest.raises(config.ConfigError, match=r"approval.rules\[1\].shell"):
        approval({"tool": "x", "action": "ask", "shell": 3})


def test_without_its_command_line_the_tool_level_rules_answer() -> None:
    """`kep mcp serve` lists tools by an argument-free verdict: a rule allowing execcmd as a
    whole still lists it; a call without `cmd` runs nothing that could be split."""
    rules = approval({"tool": "execcmd", "action": "allow"})
    assert decide(ToolCall("list", "execcmd", {}), rules, {}, spec=EXECCMD).action == "allow"
    assert decide(ToolCall("1", "execcmd", {"cmd": 5}), rules, {}, spec=EXECCMD).action == "ask"
    assert decide(ToolCall("1", "execcmd", {"cmd": "eval x"}), rules, {},
                  spec=EXECCMD).action == "ask"
