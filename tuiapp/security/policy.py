"""Approval policy: per-regex rules → allow / ask / deny. Pure functions.

The order (README "Approval rules"):
1. any configured `deny` rule that matches, wherever it stands in the list (deny wins);
2. the first configured `allow` or `ask` rule that matches;
3. the llm-functions variables LLM_MCP_NEED_CONFIRM / LLM_MCP_SKIP_CONFIRM;
4. kep's default: its own read-only built-ins are allowed, recognised by the file they come
   from (never by name, so a project's `grep` or an MCP server's `readfile` is asked about);
5. `[approval] default`.
How a rule's `args` regex meets the arguments is in argument_text.py.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from tuiapp.security import argument_text
from tuiapp.settings import paths
from tuiapp.settings.config_types import Action, ApprovalConfig, Rule
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

# kep's built-in functions that only read, by the bundled file that declares them.
READ_ONLY_BUILTINS: dict[str, frozenset[str]] = {
    "files": frozenset({"readfile", "listdir", "grep"}),
}
BUILTIN_DEFAULT = "kep's read-only built-ins"


@dataclass(frozen=True)
class Verdict:
    action: Action
    rule: str  # which rule decided, for the UI ("ask because …")
    # Set when kep asks about a call a second time (edited arguments, changed code): why.
    # An answer given for other calls ("allow all") never covers such a question.
    again: str = ""


def decide(
    call: ToolCall,
    approval: ApprovalConfig,
    env: Mapping[str, str] | None = None,
    *,
    spec: ToolSpec | None,
) -> Verdict:
    """The verdict for `call` to the tool `spec` (None: not known; kep's defaults then
    never allow it)."""
    order = tuple((spec.parameters.get("properties") or {}) if spec else ())
    matcher = _Matcher(call, order)
    for rule in approval.rules:
        if rule.action == "deny" and matcher.matches(rule):
            return Verdict("deny", rule.describe())
    for rule in approval.rules:
        if rule.action != "deny" and matcher.matches(rule):
            return Verdict(rule.action, rule.describe())
    env = env or {}
    need, skip = env.get("LLM_MCP_NEED_CONFIRM"), env.get("LLM_MCP_SKIP_CONFIRM")
    if need and _env_match(need, call.name):
        return Verdict("ask", f"LLM_MCP_NEED_CONFIRM={need}")
    if skip and _env_match(skip, call.name):
        return Verdict("allow", f"LLM_MCP_SKIP_CONFIRM={skip}")
    if spec is not None and is_read_only_builtin(spec):
        return Verdict("allow", BUILTIN_DEFAULT)
    # What the user sees on the call: "asked: no rule matched".
    why = "" if approval.default == "ask" else f" ([approval] default = {approval.default})"
    return Verdict(approval.default, f"no rule matched{why}")


def decide_direct(
    call: ToolCall,
    approval: ApprovalConfig,
    env: Mapping[str, str] | None = None,
    *,
    spec: ToolSpec | None,
) -> Verdict:
    """`kep call`: the user typed the call, so `ask` becomes allow; `deny` still stands."""
    v = decide(call, approval, env, spec=spec)
    return v if v.action == "deny" else Verdict("allow", v.rule)


def deny_rules_for(tool: str, approval: ApprovalConfig) -> list[Rule]:
    """The deny rules that can still stop calls to `tool` (for the "always allow" notice)."""
    return [r for r in approval.rules if r.action == "deny" and _name_matches(r, tool)]


def is_read_only_builtin(spec: ToolSpec) -> bool:
    """Whether `spec` is one of kep's own read-only built-ins: declared by kep's bundled
    file, and run from that file. The name alone proves nothing."""
    if spec.format != "keprompt":
        return False
    source = os.path.realpath(spec.source)
    directory, file = os.path.split(source)
    if spec.name not in READ_ONLY_BUILTINS.get(file, ()):
        return False
    if directory != os.path.realpath(paths.builtin_functions_dir()):
        return False
    exe = spec.run.get("exe")
    return exe is None or os.path.realpath(exe) == source


class _Matcher:
    """One call's argument texts, built once and only when a rule has an `args` regex."""

    def __init__(self, call: ToolCall, order: tuple[str, ...]) -> None:
        self.call, self.order = call, order
        self._texts: list[str] | None = None
        self._canonical: str | None = None

    def matches(self, rule: Rule) -> bool:
        if not _name_matches(rule, self.call.name):
            return False
        if rule.args is None:
            return True
        pattern = re.compile(rule.args)
        if rule.action == "allow":
            if self._canonical is None:
                self._canonical = argument_text.canonical(self.call.arguments)
            return pattern.search(self._canonical) is not None
        if self._texts is None:
            self._texts = argument_text.texts(
                self.call.arguments, self.call.raw_arguments, self.order)
        return any(pattern.search(t) is not None for t in self._texts)


def _name_matches(rule: Rule, name: str) -> bool:
    return re.fullmatch(rule.tool, name) is not None


def _env_match(pattern: str, name: str) -> bool:
    """`grep -q -w -E pattern <<< name`: some match bounded by non-word characters."""
    try:
        return re.search(rf"(?<![A-Za-z0-9_])(?:{pattern})(?![A-Za-z0-9_])", name) is not None
    except re.error:
        return False  # env regexes come from outside config; a bad one simply never matches
