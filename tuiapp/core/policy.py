"""Approval policy: ordered per-regex rules → allow / ask / deny. Pure functions."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from tuiapp.config import Action, ApprovalConfig, Rule
from tuiapp.core.messages import ToolCall

# Built-ins that only read are allowed out of the box; anything that writes or runs asks.
SHIPPED_RULES: tuple[Rule, ...] = (
    Rule(r"readfile|listdir|glob|grep|search_files|get_current_time", "allow",
         origin="kep default"),
)


@dataclass(frozen=True)
class Verdict:
    action: Action
    rule: str  # which rule decided, for the UI ("ask because …")


def decide(
    call: ToolCall,
    approval: ApprovalConfig,
    env: Mapping[str, str] | None = None,
    *,
    shipped: tuple[Rule, ...] = SHIPPED_RULES,
) -> Verdict:
    """Configured rules first (first match wins), then the llm-functions env regexes, then
    kep's shipped defaults, then `[approval] default`.

    LLM_MCP_NEED_CONFIRM / LLM_MCP_SKIP_CONFIRM are honoured as in llm-functions, which
    tests them with `grep -w -E REGEX <<< TOOL_NAME`: a match that is a whole word of the name
    (not glued to letters, digits or _). NEED wins over SKIP. Configured rules come first, so a
    configured `deny` always wins.
    """
    args = call.canonical_arguments()
    for rule in approval.rules:
        if _matches(rule, call.name, args):
            return Verdict(rule.action, rule.describe())
    env = env or {}
    need, skip = env.get("LLM_MCP_NEED_CONFIRM"), env.get("LLM_MCP_SKIP_CONFIRM")
    if need and _env_match(need, call.name):
        return Verdict("ask", f"LLM_MCP_NEED_CONFIRM={need}")
    if skip and _env_match(skip, call.name):
        return Verdict("allow", f"LLM_MCP_SKIP_CONFIRM={skip}")
    for rule in shipped:
        if _matches(rule, call.name, args):
            return Verdict(rule.action, rule.describe())
    return Verdict(approval.default, f"[approval] default = {approval.default}")


def decide_direct(
    call: ToolCall, approval: ApprovalConfig, env: Mapping[str, str] | None = None
) -> Verdict:
    """`kep call`: the user typed the call, so `ask` becomes allow; `deny` still stands."""
    v = decide(call, approval, env)
    return v if v.action == "deny" else Verdict("allow", v.rule)


def _env_match(pattern: str, name: str) -> bool:
    """`grep -q -w -E pattern <<< name`: some match bounded by non-word characters."""
    try:
        return re.search(rf"(?<![A-Za-z0-9_])(?:{pattern})(?![A-Za-z0-9_])", name) is not None
    except re.error:
        return False  # env regexes come from outside config; a bad one simply never matches


def _matches(rule: Rule, name: str, canonical_args: str) -> bool:
    if re.fullmatch(rule.tool, name) is None:
        return False
    return rule.args is None or re.search(rule.args, canonical_args) is not None
