"""Every approval rule in force, in the order policy.decide applies them, with where each is
written: for the rules screen and `kep rules list`. Listing only: deciding stays in policy.py.

Order: deny rules (each wins wherever it stands), then allow/ask rules in file order (the
project's kep.toml first, then the user's config.toml), then the llm-functions variables,
kep's built-in default, and `[approval] default`. A rule limited to other modes than the
current one is listed with `applies = False`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from tuiapp.security import modes, policy
from tuiapp.settings.config_types import ApprovalConfig, HookConfig, Rule


@dataclass(frozen=True)
class Entry:
    position: int  # 1-based, in the order applied
    kind: str  # "rule" | "variable" | "built-in" | "default" | "hook" (action: its event)
    action: str
    tool: str  # regex over tool names ("" for the default)
    args: str | None = None
    shell: str | None = None
    modes: tuple[str, ...] = ()
    file: str = ""
    line: int = 0
    note: str = ""  # the comment above it: who added it, and when
    where: str = ""  # for people: "kep.toml:4", "built-in default" …
    applies: bool = True  # in force in the current mode
    index: int = -1  # its place in ApprovalConfig.rules (-1: not a rule)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["modes"] = list(self.modes)
        del d["index"]
        return d


def entries(approval: ApprovalConfig, env: Mapping[str, str] | None = None,
            hooks: Iterable[HookConfig] = ()) -> list[Entry]:
    """The rules in the order applied, then the [[hooks]] (a before_tool hook is asked after
    the rules; see security/approval_flow.py)."""
    env = env or {}
    ordered = [(i, r) for i, r in enumerate(approval.rules) if r.action == "deny"]
    ordered += [(i, r) for i, r in enumerate(approval.rules) if r.action != "deny"]
    out = [_rule_entry(n, i, r, approval.mode) for n, (i, r) in enumerate(ordered, 1)]
    tail: list[tuple[str, str, str, str]] = []
    for name, action in (("LLM_MCP_NEED_CONFIRM", "ask"), ("LLM_MCP_SKIP_CONFIRM", "allow")):
        if env.get(name):
            tail.append(("variable", action, env[name], f"environment {name}"))
    tail.append(("built-in", "allow", "|".join(sorted(
        n for names in policy.READ_ONLY_BUILTINS.values() for n in names)),
        f"built-in default: {policy.BUILTIN_DEFAULT}"))
    tail.append(("default", approval.default, "", "[approval] default"))
    for kind, action, tool, where in tail:
        applies = not (approval.mode == "read-only" and kind in ("variable", "default"))
        out.append(Entry(len(out) + 1, kind, action, tool, where=where, applies=applies))
    for hook in hooks:
        out.append(Entry(len(out) + 1, "hook", hook.event, hook.matcher or "",
                         hook.command_text(), file=hook.file, where=hook.origin))
    return out


def _rule_entry(position: int, index: int, rule: Rule, mode: str) -> Entry:
    where = f"{_short_file(rule.file)}:{rule.line}" if rule.file and rule.line else (
        _short_file(rule.file) or rule.origin or "session")
    return Entry(position, "rule", rule.action, rule.tool, rule.args, rule.shell, rule.modes,
                 rule.file, rule.line, rule.note, where,
                 modes.rule_applies(rule.modes, rule.action, mode), index)


def _short_file(path: str) -> str:
    from pathlib import Path

    if not path:
        return ""
    p = Path(path)
    home = Path.home()
    try:
        return "~/" + str(p.relative_to(home))
    except ValueError:
        return p.name if p.name == "kep.toml" else str(p)


def text_lines(items: Iterable[Entry], counts: Mapping[tuple[str, int], int] | None = None,
               ) -> list[str]:
    """One line per entry, for a terminal (foreign text is made printable by the caller)."""
    lines = []
    for e in items:
        if e.kind == "hook":
            tools = f" for tools {e.tool}" if e.tool else ""
            lines.append(f"{e.position:>3}  hook on {e.action}{tools}: {e.args}  [{e.where}]")
            continue
        args = f" args {e.args}" if e.args else ""
        extra = f" shell={e.shell}" if e.shell else ""
        extra += f" modes={','.join(e.modes)}" if e.modes else ""
        off = "" if e.applies else "  (not in this mode)"
        used = ""
        if counts is not None and e.kind == "rule":
            used = f"  decided {counts.get((e.file, e.line), 0)}"
        note = f"  # {e.note}" if e.note else ""
        tool = f"tool {e.tool}" if e.tool else "any tool"
        lines.append(f"{e.position:>3}  {e.action:<5}  {tool}{args}{extra}  [{e.where}]"
                     f"{off}{used}{note}")
    return lines
