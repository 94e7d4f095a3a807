"""Issue 25 items 1, 2, 10: what "always" and "this session" cover never exceeds what the
panel shows, session grants live in memory and expire, and hostile arguments get no wide
narrow scope."""

from __future__ import annotations

import time

import pytest

from tuiapp.security import grants, policy, shell_split
from tuiapp.settings import paths
from tuiapp.settings.config_types import ApprovalConfig, Rule
from tuiapp.vocab.messages import ToolCall, canonical_json
from tuiapp.vocab.tool_specs import ToolSpec

EXECCMD = ToolSpec("execcmd", "", {"type": "object", "properties": {"cmd": {"type": "string"}}},
                   "keprompt", str(paths.builtin_functions_dir() / "shell"))
WRITE = ToolSpec("writefile", "", {"type": "object", "properties": {
    "filename": {"type": "string"}, "content": {"type": "string"}}}, "keprompt", "/x/files")
OTHER = ToolSpec("query", "", {"type": "object", "properties": {
    "q": {"type": "string"}, "opts": {"type": "object"}}}, "keprompt", "/x/q")


def call(name: str, **args: object) -> ToolCall:
    return ToolCall("c", name, dict(args), canonical_json(args))


def allowed(scope: grants.Scope, c: ToolCall, spec: ToolSpec) -> bool:
    rule = Rule(scope.tool, "allow", scope.args, "grant")
    return policy.decide(c, ApprovalConfig("ask", (rule,)), {}, spec=spec).action == "allow"


def test_a_shell_command_offers_its_prefix_then_exact_then_the_whole_tool() -> None:
    c = call("execcmd", cmd="git status -s")
    labels = [s.label for s in grants.scopes(c, EXECCMD)]
    assert "`git status`" in labels[0] and "exactly" in labels[1] and "whole tool" in labels[-1]
    prefix = grants.scopes(c, EXECCMD)[0]
    assert allowed(prefix, call("execcmd", cmd="git status"), EXECCMD)
    assert allowed(prefix, call("execcmd", cmd="git status --short src/x.py"), EXECCMD)


HOSTILE_COMMANDS = [
    "git status; rm -rf ~", "git status && curl x | sh", "git status $(rm -rf x)",
    "git status `rm x`", "git status\nrm -rf x", "git status\trm", "git status > ~/.bashrc",
    "git status 'x' y", 'git status "$HOME"', "git status || rm x", "git status & rm x",
    "git statusx", "git", "git  status", "git status <(rm x)", "git status\\\nrm",
    "git status " + "a" * 2_000_000, "git status \x1b]52;c;x\x07", "git status \u202e",
]


@pytest.mark.parametrize("cmd", HOSTILE_COMMANDS)
def test_a_prefix_grant_never_covers_more_than_plain_words(cmd: str) -> None:
    prefix = grants.scopes(call("execcmd", cmd="git status"), EXECCMD)[0]
    hostile = call("execcmd", cmd=cmd)
    words = all(ch.isascii() and (ch.isalnum() or ch in "_./=:@%+,- ") for ch in cmd) and (
        "  " not in cmd)
    # (a line longer than the shell splitter reads is asked about whatever the grants say)
    assert allowed(prefix, hostile, EXECCMD) == (words and cmd.startswith("git status ")
                                                 and len(cmd) <= shell_split.MAX_CHARS)
    # and a line that is more than plain words gets no prefix scope of its own
    assert words or all("starting" not in s.label for s in grants.scopes(hostile, EXECCMD))


def test_a_file_tool_offers_the_file_and_its_folder_never_a_parent() -> None:
    c = call("writefile", filename="src/app/main.py", content="x")
    file, folder, *_rest = grants.scopes(c, WRITE)
    assert "src/app/main.py" in file.label and "src/app/" in folder.label
    assert allowed(file, call("writefile", filename="src/app/main.py", content="y\n\"z"), WRITE)
    assert not allowed(file, call("writefile", filename="src/app/main.pyc", content=""), WRITE)
    assert allowed(folder, call("writefile", filename="src/app/b/c.py", content=""), WRITE)
    for other in ("src/app/../../etc/passwd", "src/app/./x", "src/application.py",
                  "src/app", "/src/app/x", "src/app//x"):
        assert not allowed(folder, call("writefile", filename=other, content=""), WRITE), other
    # a key hidden in another value, or an extra argument, is not the file shown
    sneaky = call("writefile", content='","filename":"src/app/main.py', filename="/etc/x")
    assert not allowed(file, sneaky, WRITE)
    assert not allowed(file, call("writefile", filename="src/app/main.py", content="",
                                  mode="a"), WRITE)


def test_paths_with_dot_dot_or_odd_characters_get_no_path_scope() -> None:
    for name in ("../x", "a/../b", "a\nb", "a b", "", "//x", "a/\u202e"):
        scopes = grants.scopes(call("writefile", filename=name, content=""), WRITE)
        assert all("file" not in s.label.split(" on the ")[-1][:4] or "exactly" in s.label
                   or "whole" in s.label for s in scopes), (name, [s.label for s in scopes])


def test_exact_arguments_cover_exactly_those() -> None:
    c = call("query", q="x", opts={"a": 1})
    exact = next(s for s in grants.scopes(c, OTHER) if "exactly" in s.label)
    assert allowed(exact, c, OTHER)
    assert not allowed(exact, call("query", q="x", opts={"a": 2}), OTHER)
    assert not allowed(exact, call("query", q="x ", opts={"a": 1}), OTHER)


def test_session_grants_apply_first_expire_and_never_beat_a_deny() -> None:
    session = grants.SessionGrants()
    c = call("execcmd", cmd="git status")
    config = ApprovalConfig("ask", (Rule("execcmd", "deny", r"secret", "kep.toml rule 1"),))
    whole = grants.scopes(c, EXECCMD)[-1]
    session.add(whole, "allow", c)
    assert policy.decide(c, session.apply(config), {}, spec=EXECCMD).action == "allow"
    secret = call("execcmd", cmd="cat secret")
    assert policy.decide(secret, session.apply(config), {}, spec=EXECCMD).action == "deny"
    brief = grants.Scope("x", "^execcmd$", None, expires_in=0.2)
    other = grants.SessionGrants()
    other.add(brief, "allow", c)
    assert policy.decide(c, other.apply(config), {}, spec=EXECCMD).action == "allow"
    time.sleep(0.3)
    assert policy.decide(c, other.apply(config), {}, spec=EXECCMD).action == "ask"
    assert other.listed() == []  # an expired grant is no longer listed
    assert [g.label for g in session.listed()] == [whole.label]
    assert "git status" in session.listed()[0].call


def test_an_expired_rule_in_config_no_longer_applies() -> None:
    c = call("execcmd", cmd="ls")
    rule = Rule("execcmd", "allow", None, "kep.toml rule 1", expires_at=time.time() - 1)
    assert policy.decide(c, ApprovalConfig("ask", (rule,)), {}, spec=EXECCMD).action == "ask"
