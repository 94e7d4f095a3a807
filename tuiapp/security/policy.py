"""Approval policy: per-regex rules → allow / ask / deny. Pure functions.

The order (README "Approval rules"):
1. any configured `deny` rule that matches, wherever it stands in the list (deny wins);
2. the first configured `allow` or `ask` rule that matches;
3. the llm-functions variables LLM_MCP_NEED_CONFIRM / LLM_MCP_SKIP_CONFIRM;
4. kep's default: its own read-only built-ins are allowed, recognised by the file they come
   from (never by name, so a project's `grep` or an MCP server's `readfile` is asked about);
5. `[approval] default`.
How a rule's `args` regex meets the arguments is in argument_text.py; regexes run in linear
time (rule_engine). A search that could not finish in time makes kep ask, never allow. Expired
rules (`expires`) no longer apply.

Shell-like tools (kep's built-in `execcmd`, recognised by its file, and any tool a rule marks
with `shell = "ARG"`) are decided per simple command of their command line (shell_split.py):
after step 1 on the whole call, every simple command goes through steps 1-5 as a call of its
own; one deny denies the call, all allowed allows it, anything else asks. A line the splitter
can't be sure of is asked about, never allowed (a deny still denies).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace

from tuiapp.security import argument_text, modes, rule_engine, shell_split
from tuiapp.settings import paths
from tuiapp.settings.config_types import Action, ApprovalConfig, Rule
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

# kep's built-in functions that only read, by the bundled file that declares them.
READ_ONLY_BUILTINS: dict[str, frozenset[str]] = {
    "files": frozenset({"readfile", "listdir", "grep"}),
}
BUILTIN_DEFAULT = "kep's read-only built-ins"
# kep's built-ins that overwrite files (their calls show a diff and are checkpointed), and
# those that reach beyond this machine (the hints `kep mcp serve` declares; see is_builtin_in).
WRITING_BUILTINS: dict[str, frozenset[str]] = {
    "files": frozenset({"writefile", "editfile", "write_base64_file"}),
}
FILE_WRITERS = WRITING_BUILTINS
OPEN_WORLD_BUILTINS: dict[str, frozenset[str]] = {
    "web": frozenset({"wwwget"}), "shell": frozenset({"execcmd"}),
}
# kep's built-in functions that run a command line, and the argument that holds it.
SHELL_BUILTINS: dict[str, dict[str, str]] = {"shell": {"execcmd": "cmd"}}


@dataclass(frozen=True)
class Verdict:
    action: Action
    rule: str  # which rule decided, for the UI ("ask because …")
    # Set when kep asks about a call a second time (edited arguments, changed code): why.
    # An answer given for other calls ("allow all") never covers such a question.
    again: str = ""
    message: str = ""  # the deciding rule's deny_message: what the model and the user read
    # Where the deciding rule is written: its file and 1-based line ("" / 0: not in a file).
    file: str = ""
    line: int = 0

    def why(self) -> str:
        """The rule, led by its deny_message when it has one."""
        return f"{self.message} ({self.rule})" if self.message else self.rule


def _by(rule: Rule, action: str | None = None, suffix: str = "") -> Verdict:
    act = action or rule.action
    return Verdict(act, rule.describe() + suffix,  # type: ignore[arg-type]
                   message=rule.deny_message if act == "deny" else "",
                   file=rule.file, line=rule.line)


def _unsure(rule: Rule) -> Verdict:
    return Verdict("ask", f"{rule.describe()}: its regex did not finish in time, so kep asks",
                   file=rule.file, line=rule.line)


def decide(
    call: ToolCall,
    approval: ApprovalConfig,
    env: Mapping[str, str] | None = None,
    *,
    spec: ToolSpec | None,
) -> Verdict:
    """The verdict for `call` to the tool `spec` (None: not known; kep's defaults then
    never allow it), in the mode `approval.mode` (core/modes.py)."""
    mode, now = approval.mode, time.time()
    rules = tuple(r for r in approval.rules
                  if modes.rule_applies(r.modes, r.action, mode) and not r.expired(now))
    if len(rules) != len(approval.rules):
        approval = replace(approval, rules=rules)
    fallback = _default
    if mode == "read-only":
        env, fallback = {}, _read_only  # nothing but kep's knowledge and marked rules allows
    return _settle(_decide(call, approval, env or {}, spec, fallback), approval)


Fallback = Callable[[ToolCall, ToolSpec | None, ApprovalConfig], "Verdict"]


def _decide(call: ToolCall, approval: ApprovalConfig, env: Mapping[str, str],
            spec: ToolSpec | None, fallback: Fallback) -> Verdict:
    order = tuple((spec.parameters.get("properties") or {}) if spec else ())
    matcher = _Matcher(call, order)
    unsure: Rule | None = None  # a deny rule whose regex did not finish in time
    for rule in approval.rules:
        if rule.action == "deny":
            hit = matcher.matches(rule)
            if hit:
                return _by(rule)
            if hit is None:
                unsure = unsure or rule
    if unsure is not None:
        return _unsure(unsure)
    argument = shell_argument(call.name, approval, spec)
    # Without its command line (listing for an MCP client, a probe) a call runs nothing to
    # split: the tool-level rules answer, as for any tool.
    if argument is not None and argument in call.arguments:
        return _decide_shell(call, argument, approval, env, spec, order, fallback)
    return _after_deny(call, matcher, approval, env, spec, fallback)


def _default(call: ToolCall, spec: ToolSpec | None, approval: ApprovalConfig) -> Verdict:
    # What the user sees on the call: "asked: no rule matched".
    why = "" if approval.default == "ask" else f" ([approval] default = {approval.default})"
    return Verdict(approval.default, f"no rule matched{why}")


def _read_only(call: ToolCall, spec: ToolSpec | None, approval: ApprovalConfig) -> Verdict:
    if spec is not None and spec.format == "mcp" and spec.run.get("read_only_hint") is True:
        return Verdict("ask", "read-only mode: its MCP server says it changes nothing "
                              "(readOnlyHint)")
    return Verdict("deny", modes.READ_ONLY_DENIAL)


def _settle(verdict: Verdict, approval: ApprovalConfig) -> Verdict:
    """What the mode makes of a question: yolo answers it, auto answers it inside a sandbox."""
    if verdict.action != "ask":
        return verdict
    if approval.mode == "yolo":
        return replace(verdict, action="allow", rule=f"yolo mode (would ask: {verdict.rule})")
    if approval.mode == "auto":
        if approval.sandboxed:
            return replace(verdict, action="allow",
                           rule=f"auto mode, inside the sandbox (would ask: {verdict.rule})")
        return replace(verdict, rule=f"{verdict.rule}; auto mode asks: no sandbox is in force")
    return verdict


def _after_deny(
    call: ToolCall, matcher: _Matcher, approval: ApprovalConfig, env: Mapping[str, str],
    spec: ToolSpec | None, fallback: Fallback,
) -> Verdict:
    """Steps 2-5, once no deny rule matched."""
    for rule in approval.rules:
        if rule.action != "deny":
            hit = matcher.matches(rule)
            if hit is None:
                return _unsure(rule)
            if hit:
                return _by(rule)
    need, skip = env.get("LLM_MCP_NEED_CONFIRM"), env.get("LLM_MCP_SKIP_CONFIRM")
    if need and _env_match(need, call.name):
        return Verdict("ask", f"LLM_MCP_NEED_CONFIRM={need}")
    if skip and _env_match(skip, call.name):
        return Verdict("allow", f"LLM_MCP_SKIP_CONFIRM={skip}")
    if spec is not None and is_read_only_builtin(spec):
        return Verdict("allow", BUILTIN_DEFAULT)
    return fallback(call, spec, approval)


def shell_argument(name: str, approval: ApprovalConfig, spec: ToolSpec | None) -> str | None:
    """The argument holding a command line when the tool `name` runs one, else None: kep's
    own `execcmd` (by its file), or a tool a rule marks with `shell = "ARG"`."""
    if spec is not None and _is_builtin(spec, SHELL_BUILTINS):
        return SHELL_BUILTINS[os.path.basename(os.path.realpath(spec.source))][spec.name]
    for rule in approval.rules:
        if rule.shell and _name_matches(rule, name):
            return rule.shell
    return None


def _decide_shell(
    call: ToolCall, argument: str, approval: ApprovalConfig, env: Mapping[str, str],
    spec: ToolSpec | None, order: tuple[str, ...], fallback: Fallback,
) -> Verdict:
    line = call.arguments.get(argument)
    if not isinstance(line, str):
        return Verdict("ask", f"`{argument}` is not a command line kep can check")
    parts = shell_split.split(line)
    decided: list[tuple[str, Verdict]] = []
    for text in parts.commands:
        one = ToolCall(call.id, call.name, {**call.arguments, argument: text})
        matcher = _Matcher(one, order)
        hits = [(r, matcher.matches(r)) for r in approval.rules if r.action == "deny"]
        deny = next((r for r, hit in hits if hit), None)
        if deny is not None:
            return _by(deny, suffix=f", on `{text}`")
        slow = next((r for r, hit in hits if hit is None), None)
        if slow is not None:
            return _unsure(slow)
        decided.append((text, _after_deny(one, matcher, approval, env, spec, fallback)))
    for text, verdict in decided:  # denied by the default or the mode: no question to ask
        if verdict.action == "deny":
            return replace(verdict, rule=f"{verdict.rule}, on `{text}`")
    if parts.unsure:
        if not decided and (v := fallback(call, spec, approval)).action == "deny":
            return v  # nothing readable, and read-only mode (or the default) denies
        return Verdict("ask", f"kep can't be sure what this command line runs: {parts.unsure[0]}")
    for text, verdict in decided:
        if verdict.action != "allow":
            return replace(verdict, rule=f"{verdict.rule}, on `{text}`")
    last = decided[-1][1]  # the file and line shown: the last command's rule
    return Verdict("allow", "; ".join(dict.fromkeys(v.rule for _, v in decided)),
                   file=last.file, line=last.line)


def decide_direct(
    call: ToolCall,
    approval: ApprovalConfig,
    env: Mapping[str, str] | None = None,
    *,
    spec: ToolSpec | None,
) -> Verdict:
    """`kep call`: the user typed the call, so `ask` becomes allow; `deny` still stands."""
    v = decide(call, approval, env, spec=spec)
    return v if v.action == "deny" else replace(v, action="allow")


def deny_rules_for(tool: str, approval: ApprovalConfig) -> list[Rule]:
    """The deny rules that can still stop calls to `tool` (for the "always allow" notice)."""
    return [r for r in approval.rules if r.action == "deny" and _name_matches(r, tool) is not False]


def is_read_only_builtin(spec: ToolSpec) -> bool:
    """Whether `spec` is one of kep's own read-only built-ins: declared by kep's bundled
    file, and run from that file. The name alone proves nothing."""
    return _is_builtin(spec, READ_ONLY_BUILTINS)


def is_file_writer(spec: ToolSpec) -> bool:
    """Whether `spec` is one of kep's own file-writing built-ins (by its bundled file)."""
    return _is_builtin(spec, FILE_WRITERS)


def is_builtin_in(spec: ToolSpec, table: Mapping[str, Collection[str]]) -> bool:
    """Whether `spec` is one of kep's own built-ins listed in `table` (bundled file → names),
    by where it is declared and run from, never by its name alone."""
    return _is_builtin(spec, table)


def _is_builtin(spec: ToolSpec, table: Mapping[str, Collection[str]]) -> bool:
    """Whether `spec` is one of `table`'s functions (by bundled file name) declared by kep's
    bundled file and run from it."""
    if spec.format != "keprompt":
        return False
    source = os.path.realpath(spec.source)
    directory, file = os.path.split(source)
    if spec.name not in table.get(file, ()):
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

    def matches(self, rule: Rule) -> bool | None:
        """Whether `rule` matches the call; None when its regex did not finish in time."""
        named = _name_matches(rule, self.call.name)
        if not named or rule.args is None:
            return named
        if rule.action == "allow":
            if self._canonical is None:
                self._canonical = argument_text.canonical(self.call.arguments)
            return rule_engine.search_any(rule.args, (self._canonical,))
        if self._texts is None:
            self._texts = argument_text.texts(
                self.call.arguments, self.call.raw_arguments, self.order)
        # (a deny or ask rule may match a little more often, never less: see rule_engine)
        return rule_engine.search_any(rule.args, self._texts, wider_ok=True)


def _name_matches(rule: Rule, name: str) -> bool | None:
    return rule_engine.fullmatch(rule.tool, name)


def _env_match(pattern: str, name: str) -> bool:
    """`grep -q -w -E pattern <<< name`: some match bounded by non-word characters."""
    try:
        return re.search(rf"(?<![A-Za-z0-9_])(?:{pattern})(?![A-Za-z0-9_])", name) is not None
    except re.error:
        return False  # env regexes come from outside config; a bad one simply never matches
