"""Rules checked against their own examples (issue 25 item 5): `match = [...]` must each be
decided by the rule, `not_match = [...]` must not be. An example is a table of arguments, or
`{tool = "name", args = {...}}` when the rule's tool regex is not one plain name."""

from __future__ import annotations

import re
from typing import Any

from tuiapp.security import policy
from tuiapp.settings.config_types import ApprovalConfig, ConfigError, Rule
from tuiapp.vocab.messages import ToolCall, canonical_json


def example_call(rule: Rule, example: Any) -> ToolCall | str:
    """The call an example stands for, or why it can't be one."""
    if not isinstance(example, dict):
        return "an example must be a table of arguments"
    if set(example) == {"tool", "args"} and isinstance(example["args"], dict):
        name, args = example["tool"], example["args"]
        if not isinstance(name, str):
            return "`tool` must be a string"
    else:
        name = _plain_name(rule.tool)
        if name is None:
            return (f"tool regex {rule.tool!r} is not one name: write the example as "
                    '{tool = "NAME", args = {...}}')
        args = example
    return ToolCall("example", name, dict(args), canonical_json(args))


def _plain_name(regex: str) -> str | None:
    body = regex.removeprefix("^").removesuffix("$")
    name = re.sub(r"\\(.)", r"\1", body)
    literal = re.escape(name) == body or not any(c in body for c in ".^$*+?{}[]|()\\")
    return name if literal and re.fullmatch(regex, name) else None


def decided_by(rule: Rule, call: ToolCall) -> bool:
    verdict = policy.decide(call, ApprovalConfig("ask", (rule,)), {}, spec=None)
    return verdict.rule == rule.describe()


def check_all(approval: ApprovalConfig) -> None:
    """Raise ConfigError, one line naming the rule's file and key, for the first rule whose
    examples fail: then none of the rules apply (the config does not load)."""
    for rule in approval.rules:
        if not (rule.match or rule.not_match):
            continue
        failed = check(rule)
        if failed is not None:
            # origin: "kep.toml rule 3" (with ", line 12" once the rule's place is known)
            file, _, number = rule.origin.rpartition(" rule ")
            number, _, line = number.partition(", line ")
            where = f" (line {line})" if line else ""
            raise ConfigError(file or rule.origin, f"approval.rules[{number}].{failed[0]}",
                              failed[1] + where)


def check(rule: Rule) -> tuple[str, str] | None:
    """(which example, what is wrong) for the first failing example; None when all hold."""
    for key, examples, wanted in (("match", rule.match, True),
                                  ("not_match", rule.not_match, False)):
        for i, example in enumerate(examples, 1):
            call = example_call(rule, example)
            if isinstance(call, str):
                return f"{key}[{i}]", call
            if decided_by(rule, call) != wanted:
                shown = f"{call.name} {canonical_json(call.arguments)}"
                if len(shown) > 200:
                    shown = shown[:199] + "…"
                verb = "does not match" if wanted else "matches"
                return f"{key}[{i}]", f"the rule {verb} its example {shown}; not applied"
    return None
