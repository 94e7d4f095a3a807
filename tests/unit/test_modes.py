"""Approval modes (issue 25 item 7): read-only, ask, auto, yolo; rules limited to modes; a
grant never applies in a stricter mode; --mode on every command; never yolo from a file."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tuiapp import cli
from tuiapp.project import config as project_config
from tuiapp.security import modes
from tuiapp.security.policy import decide, decide_direct
from tuiapp.settings import config
from tuiapp.settings.config_types import ApprovalConfig, ConfigError
from tuiapp.settings.paths import builtin_functions_dir
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

FILES = str(builtin_functions_dir() / "files")
SHELL = str(builtin_functions_dir() / "shell")


def builtin(name: str, file: str = FILES) -> ToolSpec:
    return ToolSpec(name, "", {"type": "object"}, "keprompt", file, run={"exe": file})


def mcp_tool(name: str, read_only: bool | None) -> ToolSpec:
    run: dict[str, Any] = {"server": "s", "tool": name}
    if read_only is not None:
        run["read_only_hint"] = read_only
    return ToolSpec(name, "", {"type": "object"}, "mcp", "mcp:s", run=run)


def approval(*rules: dict[str, Any], default: str = "ask", mode: str = "ask") -> ApprovalConfig:
    data = {"approval": {"default": default, "rules": list(rules)}}
    a = config.parse(data, "kep.toml", Path("/p")).approval
    return replace(a, mode=mode)


def act(a: ApprovalConfig, name: str, args: dict[str, Any] | None = None,
        spec: ToolSpec | None = None, env: dict[str, str] | None = None) -> str:
    spec = spec if spec is not None else builtin(name)
    return decide(ToolCall("1", name, args or {}), a, env, spec=spec).action


# Every kind of tool kep can meet, with what read-only mode must make of it.
SURFACES = [
    ("readfile", builtin("readfile"), "allow"),
    ("listdir", builtin("listdir"), "allow"),
    ("grep", builtin("grep"), "allow"),
    ("writefile", builtin("writefile"), "deny"),
    ("execcmd", builtin("execcmd", SHELL), "deny"),
    ("wwwget", builtin("wwwget"), "deny"),
    ("project_tool", ToolSpec("project_tool", "", {"type": "object"}, "keprompt", "/p/x"),
     "deny"),
    ("mcp_write", mcp_tool("mcp_write", None), "deny"),
    ("mcp_said_false", mcp_tool("mcp_said_false", False), "deny"),
    ("mcp_read", mcp_tool("mcp_read", True), "ask"),
]


@pytest.mark.parametrize(("name", "spec", "expected"), SURFACES, ids=[s[0] for s in SURFACES])
def test_read_only_mode_runs_only_what_changes_nothing(name: str, spec: ToolSpec,
                                                       expected: str) -> None:
    # Even with rules and the environment that would allow everything in ask mode.
    a = approval({"tool": ".*", "action": "allow"}, default="allow", mode="read-only")
    assert act(a, name, {"cmd": "ls"}, spec, env={"LLM_MCP_SKIP_CONFIRM": ".*"}) == expected


def test_read_only_denial_says_why_and_kep_call_is_denied_too() -> None:
    a = approval(mode="read-only")
    v = decide(ToolCall("1", "writefile", {}), a, {}, spec=builtin("writefile"))
    assert v.action == "deny" and "read-only mode" in v.rule
    assert decide_direct(ToolCall("1", "writefile", {}), a, {},
                         spec=builtin("writefile")).action == "deny"


def test_rules_marked_read_only_allow_in_read_only_mode_shell_commands_included() -> None:
    a = approval(
        {"tool": "execcmd", "action": "allow", "args": r'^\{"cmd":"git status"\}$',
         "modes": ["read-only", "ask"]},
        {"tool": "execcmd", "action": "allow", "args": r'^\{"cmd":"head -5"\}$'},
        mode="read-only")
    shell = builtin("execcmd", SHELL)
    assert act(a, "execcmd", {"cmd": "git status"}, shell) == "allow"
    # head is allowed by an unmarked rule: that rule does not count in read-only mode.
    assert act(a, "execcmd", {"cmd": "git status | head -5"}, shell) == "deny"
    assert act(replace(a, mode="ask"), "execcmd", {"cmd": "git status | head -5"},
               shell) == "allow"


def test_deny_rules_deny_in_every_mode() -> None:
    for mode in modes.MODES:
        a = approval({"tool": "readfile", "action": "deny"}, mode=mode)
        assert act(a, "readfile") == "deny", mode


def test_yolo_asks_nothing_but_deny_still_denies() -> None:
    a = approval({"tool": "writefile", "action": "deny"}, mode="yolo")
    assert act(a, "execcmd", {"cmd": "eval x"}, builtin("execcmd", SHELL)) == "allow"
    assert act(a, "project_tool") == "allow"
    assert act(a, "writefile") == "deny"


def test_auto_asks_without_a_sandbox_and_says_so() -> None:
    a = approval(mode="auto")
    v = decide(ToolCall("1", "writefile", {}), a, {}, spec=builtin("writefile"))
    assert v.action == "ask" and "no sandbox" in v.rule
    inside = replace(a, sandboxed=True)
    assert act(inside, "writefile") == "allow"


@pytest.mark.parametrize("walls", [True, False])
def test_the_workspace_tells_auto_mode_whether_the_walls_are_up(
        tmp_path: Path, walls: bool) -> None:
    """Nothing set `sandboxed`, so `auto` asked about everything, walls or not."""
    from tuiapp.project.workspace import Workspace
    from tuiapp.security.sandbox import spawn

    root = tmp_path / "p"
    (root / "prompts" / "functions").mkdir(parents=True)
    (root / "kep.toml").write_text("" if walls else "[sandbox]\nenabled = false\n")
    cfg = project_config.load(root)
    spawn.use_config(cfg)
    try:
        if walls and not spawn.active():
            pytest.skip("no sandbox mechanism on this machine")
        ws = Workspace(cfg)
        ws.set_mode("auto")  # (a project may not choose it: the session does)
        a = ws.approval()
        assert a.sandboxed is walls
        assert act(a, "project_tool") == ("allow" if walls else "ask")
    finally:
        spawn.use_config(project_config.load(tmp_path))


def test_rules_limited_to_modes_apply_only_there() -> None:
    rule = {"tool": "writefile", "action": "allow", "modes": ["auto", "yolo"]}
    assert act(approval(rule, mode="auto"), "writefile") == "allow"
    assert act(approval(rule, mode="yolo"), "writefile") == "allow"
    assert act(approval(rule, mode="ask"), "writefile") == "ask"
    assert act(approval(rule, mode="read-only"), "writefile") == "deny"


@pytest.mark.parametrize("granted_in", modes.MODES[:-1])
def test_a_grant_never_applies_in_a_stricter_mode(granted_in: str) -> None:
    grant = {"tool": "^writefile$", "action": "allow"}
    limit = modes.grant_modes(granted_in)
    if limit:
        grant["modes"] = list(limit)
    for mode in modes.MODES:
        got = act(approval(grant, mode=mode), "writefile")
        if modes.strictness(mode) < modes.strictness(granted_in):
            assert got != "allow", (granted_in, mode)
        else:
            assert got == "allow", (granted_in, mode)


def test_yolo_is_never_read_from_a_file_and_bad_modes_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"approval.mode: yolo is chosen for a session"):
        config.parse({"approval": {"mode": "yolo"}}, "config.toml", tmp_path)
    with pytest.raises(ConfigError, match=r"approval.mode: must be one of"):
        config.parse({"approval": {"mode": "lax\t"}}, "config.toml", tmp_path)
    with pytest.raises(ConfigError, match=r"approval.rules\[1\].modes"):
        config.parse({"approval": {"rules": [{"tool": "x", "action": "allow",
                                              "modes": ["ask", "yolo!"]}]}}, "c", tmp_path)
    with pytest.raises(ConfigError, match=r"approval.rules\[1\].modes"):
        config.parse({"approval": {"rules": [{"tool": "x", "action": "allow",
                                              "modes": []}]}}, "c", tmp_path)


def test_a_project_may_make_kep_stricter_never_quieter(tmp_path: Path) -> None:
    from tuiapp.security import trust

    user = tmp_path / "config.toml"
    user.write_text('[approval]\nmode = "read-only"\n')
    project = tmp_path / "p"
    project.mkdir()
    (project / "kep.toml").write_text('[approval]\nmode = "auto"\n')
    trust.trust(project)
    cfg = project_config.load(project, user)
    assert cfg.approval.mode == "read-only"  # the user's choice stands
    assert any("approval.mode = 'auto' ignored" in w for w in cfg.warnings)
    (project / "kep.toml").write_text('[approval]\nmode = "read-only"\n')
    user.write_text("")
    assert project_config.load(project, user).approval.mode == "read-only"


COMMAND_LINES = [[], ["run", "hi"], ["functions"], ["call", "x"], ["new", "x"], ["init"],
                 ["trust"], ["mcp", "serve"], ["sessions", "list"], ["config", "show"]]


@pytest.mark.parametrize("words", COMMAND_LINES, ids=lambda w: " ".join(w) or "tui")
def test_every_command_takes_mode(words: list[str]) -> None:
    assert cli.parse([*words, "--mode", "read-only"]).mode == "read-only"
    assert cli.parse(["--mode", "yolo", *words]).mode == "yolo"
    assert cli.parse(words).mode is None


def test_an_unknown_mode_is_a_usage_error() -> None:
    with pytest.raises(SystemExit):
        cli.parse(["--mode", "lax"])


def test_kep_call_in_read_only_mode_is_denied(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    proc = subprocess.run(
        [sys.executable, "-m", "tuiapp", "call", "writefile",
         json.dumps({"filename": "out.txt", "content": "x"}), "--mode", "read-only",
         "--project", str(tmp_path)],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "read-only mode" in proc.stderr
    assert not target.exists()


def test_next_mode_cycles_and_can_skip_yolo() -> None:
    assert [modes.next_mode(m) for m in modes.MODES] == ["ask", "auto", "yolo", "read-only"]
    assert modes.next_mode("auto", include_yolo=False) == "read-only"


@pytest.mark.parametrize("cmd", ["eval ls", "ls; $X", 'echo "unbalanced', "sh -c \"$C\""])
def test_read_only_denies_lines_it_cannot_read_instead_of_asking(cmd: str) -> None:
    shell = builtin("execcmd", SHELL)
    a = approval({"tool": "execcmd", "action": "allow", "modes": ["read-only"]},
                 mode="read-only")
    assert act(a, "execcmd", {"cmd": cmd}, shell) in ("ask", "deny")  # never allow
    strict = approval(mode="read-only")
    assert act(strict, "execcmd", {"cmd": cmd}, shell) == "deny"
