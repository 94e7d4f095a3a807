"""`[[approval.rules]]` tables → Rule: regexes compiled, `deny_message`, `expires` (a
duration such as "2h" counted from `added`, or a date and time), and the rule's `match` /
`not_match` examples kept (checked by the security layer when the rules load: see
security.rule_examples)."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

from tuiapp.settings.config_reader import TableReader
from tuiapp.settings.config_types import APPROVAL_MODES, ConfigError, Rule

_DURATION = re.compile(r"(\d{1,6})\s*([smhd])")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float | None:
    """"2h" → 7200.0; None when it is not a duration."""
    m = _DURATION.fullmatch(text.strip())
    return int(m.group(1)) * _UNIT[m.group(2)] if m else None


def _time(text: str) -> float | None:
    try:
        when = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return when.timestamp()


def parse_rules(ar: TableReader, file: Path | str) -> list[Rule]:
    rules = []
    for i, raw in enumerate(ar.get("rules", list, []), 1):
        key = f"approval.rules[{i}]"
        if not isinstance(raw, dict):
            raise ConfigError(file, key, "expected a table")
        rr = ar.child(raw, f"{key}.")
        tool = rr.regex("tool")
        if tool is None:
            raise ConfigError(file, f"{key}.tool", "required (a regex)")
        action = rr.choice("action", ("allow", "ask", "deny"), None)
        if action is None:
            raise ConfigError(file, f"{key}.action", "required: allow, ask or deny")
        rr.get("comment", str)  # kep's note of where an "always" rule came from
        added = rr.get("added", str)
        expires_at = _expiry(rr, file, key, added)
        examples = []
        for name in ("match", "not_match"):
            value = rr.get(name, list, [])
            examples.append(tuple(value))
        shell = rr.get("shell", str)
        if shell is not None and not shell.strip():
            raise rr.error("shell", "expected the name of the argument that holds the command line")
        rule = Rule(tool, action, rr.regex("args"), f"{Path(file).name} rule {i}",
                    deny_message=rr.get("deny_message", str, ""), expires_at=expires_at,
                    match=examples[0], not_match=examples[1], shell=shell,
                    modes=rule_modes(rr))
        rules.append(rule)
    return rules


def _expiry(rr: TableReader, file: Path | str, key: str, added: str | None) -> float | None:
    expires = rr.get("expires", str)
    if expires is None:
        return None
    span = parse_duration(expires)
    if span is not None:
        start = _time(added) if added else None
        if start is None:
            raise ConfigError(file, f"{key}.expires", f"{expires!r} counts from `added`, "
                              "which is missing or not a date and time")
        return start + span
    at = _time(expires)
    if at is None:
        raise ConfigError(file, f"{key}.expires",
                          f"expected a duration such as \"2h\" or a date and time; got {expires!r}")
    return at


def rule_modes(rr: TableReader) -> tuple[str, ...]:
    named = rr.get("modes", list, [])
    if "modes" in rr.table and not (
            named and all(isinstance(m, str) and m in APPROVAL_MODES for m in named)):
        raise rr.error("modes", f"expected a list of modes from {', '.join(APPROVAL_MODES)}")
    return tuple(dict.fromkeys(named))
