"""Approval policy: ordered regex rules, args regex, llm-functions env vars, kep call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tuiapp.project import config as project_config
from tuiapp.security.policy import decide, decide_direct
from tuiapp.settings import config
from tuiapp.settings.config_types import ApprovalConfig, ConfigError
from tuiapp.settings.paths import builtin_functions_dir
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

BUILTIN_FILES = str(builtin_functions_dir() / "files")


def builtin(name: str) -> ToolSpec:
    """A tool as the registry lists kep's own bundled `files` executable."""
    return ToolSpec(name, "", {"type": "object"}, "keprompt", BUILTIN_FILES,
                    run={"exe": BUILTIN_FILES})


def approval(*rules: dict[str, Any], default: str = "ask") -> ApprovalConfig:
    data = {"approval": {"default": default, "rules": list(rules)}}
    return config.parse(data, "kep.toml", Path("/p")).approval


def verdict(
    approval_cfg: ApprovalConfig,
    name: str,
    args: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> str:
    return decide(ToolCall("1", name, args or {}), approval_cfg, env, spec=builtin(name)).action


@pytest.mark.parametrize(
    ("name", "action"),
    [
        ("readfile", "allow"),
        ("listdir", "allow"),
        ("grep", "allow"),
        ("writefile", "ask"),
        ("execcmd", "ask"),
        ("wwwget", "ask"),
        ("something_else", "ask"),
    ],
)
def test_shipped_defaults_allow_reading_and_ask_for_the_rest(name: str, action: str) -> None:
    assert verdict(approval(), name) == action


def test_rules_in_order_first_match_wins_but_deny_wins_whatever_its_place() -> None:
    a = approval({"tool": "exec.*", "action": "deny"}, {"tool": ".*", "action": "allow"})
    assert verdict(a, "execcmd") == "deny"
    assert verdict(a, "writefile") == "allow"
    b = approval({"tool": ".*", "action": "allow"}, {"tool": "exec.*", "action": "deny"})
    assert verdict(b, "execcmd") == "deny"
    assert verdict(b, "writefile") == "allow"
    c = approval({"tool": ".*", "action": "allow"}, {"tool": "write.*", "action": "ask"})
    assert verdict(c, "writefile") == "allow"  # among allow and ask, order still decides


def test_tool_regex_is_a_full_match_and_rules_beat_shipped_defaults() -> None:
    a = approval({"tool": "read", "action": "deny"}, {"tool": "readfile", "action": "ask"})
    v = decide(ToolCall("1", "readfile", {}), a, spec=builtin("readfile"))
    assert v.action == "ask" and v.rule == "kep.toml rule 2 (tool matches readfile)"


def test_args_regex_searches_the_canonical_json() -> None:
    a = approval(
        {"tool": "execcmd", "args": r'"cmd":"(ls|pwd)\b', "action": "allow"},
        {"tool": "execcmd", "args": "rm -rf", "action": "deny"},
    )
    assert verdict(a, "execcmd", {"cmd": "ls -la"}) == "allow"
    assert verdict(a, "execcmd", {"cmd": "cd / && rm -rf x"}) == "deny"
    assert verdict(a, "execcmd", {"cmd": "make"}) == "ask"
    # Keys are sorted and there are no spaces, so rules are easy to write.
    b = approval(
        {"tool": "w.*", "args": '^{"content":"hi","filename":"a.txt"}$', "action": "allow"}
    )
    assert verdict(b, "writefile", {"filename": "a.txt", "content": "hi"}) == "allow"


def test_default_applies_when_nothing_matches() -> None:
    assert verdict(approval(default="deny"), "execcmd") == "deny"
    assert verdict(approval(default="allow"), "execcmd") == "allow"
    v = decide(ToolCall("1", "x", {}), approval(default="deny"), spec=None)
    assert v.rule == "no rule matched ([approval] default = deny)"


def test_env_skip_and_need_confirm_need_wins() -> None:
    a = approval()
    assert (
        verdict(a, "git_status", env={"LLM_MCP_SKIP_CONFIRM": "git_status|git_diff.*"}) == "allow"
    )
    assert verdict(a, "readfile", env={"LLM_MCP_NEED_CONFIRM": "readfile"}) == "ask"
    both = {"LLM_MCP_SKIP_CONFIRM": ".*", "LLM_MCP_NEED_CONFIRM": "git_commit|git_reset"}
    assert verdict(a, "git_commit", env=both) == "ask"
    assert verdict(a, "git_log", env=both) == "allow"
    # As llm-functions' `grep -w -E`: a whole-word match of the name, not a substring.
    assert verdict(a, "git_status_all", env={"LLM_MCP_SKIP_CONFIRM": "git_status"}) == "ask"
    assert verdict(a, "fs-ls", env={"LLM_MCP_SKIP_CONFIRM": "ls"}) == "allow"
    # A bad env regex never matches (it is not config: nothing to report it against).
    assert verdict(a, "execcmd", env={"LLM_MCP_SKIP_CONFIRM": "("}) == "ask"


def test_configured_rules_come_before_env_vars() -> None:
    a = approval({"tool": "execcmd", "action": "deny"})
    assert verdict(a, "execcmd", env={"LLM_MCP_SKIP_CONFIRM": ".*"}) == "deny"


@pytest.mark.parametrize("key", ["tool", "args"])
def test_invalid_regex_is_a_config_error_naming_the_rule(key: str) -> None:
    rule = {"tool": "ok", "action": "allow", key: "(unclosed"}
    with pytest.raises(ConfigError) as e:
        approval({"tool": "fine", "action": "ask"}, rule)
    assert e.value.key == f"approval.rules[2].{key}"
    assert "invalid regex '(unclosed'" in str(e.value) and str(e.value).startswith("kep.toml: ")


def test_a_rule_needs_tool_and_a_valid_action() -> None:
    with pytest.raises(ConfigError, match=r"approval.rules\[1\].action"):
        approval({"tool": "x", "action": "maybe"})
    with pytest.raises(ConfigError, match=r"approval.rules\[1\].tool"):
        approval({"action": "allow"})


def test_kep_call_skips_asking_but_deny_still_stands() -> None:
    a = approval({"tool": "execcmd", "args": "rm ", "action": "deny"})
    spec = builtin("execcmd")
    assert decide_direct(ToolCall("1", "execcmd", {"cmd": "ls"}), a, spec=spec).action == "allow"
    denied = decide_direct(ToolCall("1", "execcmd", {"cmd": "rm x"}), a, spec=spec)
    assert denied.action == "deny" and "rule 1" in denied.rule
    x = ToolCall("1", "x", {})
    assert decide_direct(x, approval(default="deny"), spec=None).action == "deny"


def test_project_rules_come_before_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = tmp_path / "user.toml"
    user.write_text('[[approval.rules]]\ntool = "execcmd"\naction = "allow"\n')
    (tmp_path / "kep.toml").write_text('[[approval.rules]]\ntool = "exec.*"\naction = "deny"\n')
    cfg = project_config.load(tmp_path, user_file=user)
    assert verdict(cfg.approval, "execcmd") == "deny"
