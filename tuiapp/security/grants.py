"""What an answer wider than one call covers (issue 25): the scopes offered for a call, and the
session grants kept in memory.

A scope never covers more than the label shown for it:
- a shell-like tool (kep's `execcmd`, or a tool whose only argument is a command line):
  the command's leading plain words (`git status`), followed only by plain words (no quotes,
  `;`, `&`, `|`, `$`, backticks, redirections or newlines);
- a file tool (a `path`/`filename`-like argument): that file, or its folder (no `..` part),
  with its other arguments free only where they are plain strings, numbers or booleans;
- any tool: these exact arguments; and, as a separate choice, the whole tool.
Allow rules are anchored regexes over the arguments' canonical JSON (see argument_text).
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any

from tuiapp.settings import paths
from tuiapp.settings.config_types import Action, ApprovalConfig, Rule
from tuiapp.vocab.messages import ToolCall, canonical_json
from tuiapp.vocab.tool_specs import ToolSpec

COMMAND_KEYS = ("cmd", "command", "command_line", "commandline", "script")
PATH_KEYS = ("path", "filename", "file", "file_path", "filepath")
PREFIX_WORDS = 3  # `npm run test`
EXPIRY_CHOICE = 2 * 3600  # the "for 2 h" variant offered beside each scope
# A plain word: what may follow a command prefix (letters, digits, `_ . / = : @ % + , -`).
_WORD = r"[A-Za-z0-9_./=:@%+,-]+"
_JSON_STRING = r'"(?:[^"\\]|\\.)*"'  # any JSON string, escapes included
_BY_TYPE = {"string": _JSON_STRING, "number": r"-?[0-9][0-9.eE+-]*",
            "integer": r"-?[0-9]+", "boolean": r"(?:true|false)"}
_SEGMENT = r"(?:[A-Za-z0-9_-][A-Za-z0-9_.-]*|\.[A-Za-z0-9_-][A-Za-z0-9_.-]*)"  # never . or ..


@dataclass(frozen=True)
class Scope:
    label: str  # what the user is shown, and all it covers
    tool: str  # regex, full match on the tool name
    args: str | None  # regex over the canonical arguments (allow) / values (deny); None: any
    expires_in: float | None = None  # seconds

    def for_a_while(self) -> Scope:
        return Scope(f"{self.label}, for 2 h", self.tool, self.args, EXPIRY_CHOICE)


def _tool(name: str) -> str:
    return f"^{re.escape(name)}$"


def command_key(call: ToolCall, spec: ToolSpec | None) -> str | None:
    """The argument that holds a command line, for a shell-like tool; else None."""
    props = (spec.parameters.get("properties") or {}) if spec else {}
    keys = [k for k in call.arguments if k in COMMAND_KEYS]
    builtin = spec is not None and _is_builtin(spec, "shell") and call.name == "execcmd"
    if len(call.arguments) != 1 or len(keys) != 1 or not isinstance(call.arguments[keys[0]], str):
        return None
    if builtin or (len(props) == 1 and keys[0] in props):
        return keys[0]
    return None


def _is_builtin(spec: ToolSpec, file: str) -> bool:
    source = os.path.realpath(spec.source)
    return source == os.path.realpath(paths.builtin_functions_dir() / file)


def command_prefix(command: str) -> str | None:
    """`git status -s` → `git status`; None when the line is more than plain words."""
    words = command.split(" ")
    if not command or any(w == "" for w in words) or not all(
            re.fullmatch(_WORD, w) for w in words):
        return None
    lead = []
    for w in words[:PREFIX_WORDS]:
        if w.startswith("-") or "/" in w or "=" in w:
            break
        lead.append(w)
    return " ".join(lead) or None


def scopes(call: ToolCall, spec: ToolSpec | None, action: Action = "allow") -> list[Scope]:
    """The choices for "always" / "this session", narrowest first, the whole tool last."""
    out: list[Scope] = []
    name, tool = call.name, _tool(call.name)
    key = command_key(call, spec)
    if key is not None and (prefix := command_prefix(call.arguments[key])):
        if action == "allow":
            args = rf'^\{{"{re.escape(key)}":"{re.escape(prefix)}( {_WORD})*"\}}$'
        else:  # a deny searches the decoded values: anything that starts so
            args = rf"^\s*{re.escape(prefix)}(\s|$)"
        out.append(Scope(f"{name}: commands starting `{prefix}`", tool, args))
    if action == "allow":
        out += _path_scopes(call, spec, tool)
        exact = canonical_json(call.arguments)
        if len(exact) <= 2000:
            shown = exact if len(exact) <= 120 else exact[:119] + "…"
            out.append(Scope(f"{name} with exactly {shown}", tool, f"^{re.escape(exact)}$"))
    out.append(Scope(f"the whole tool {name}, any arguments", tool, None))
    return out


def _path_scopes(call: ToolCall, spec: ToolSpec | None, tool: str) -> list[Scope]:
    props: dict[str, Any] = (spec.parameters.get("properties") or {}) if spec else {}
    key = next((k for k in PATH_KEYS if isinstance(call.arguments.get(k), str)), None)
    if key is None or any(k not in props for k in call.arguments):
        return []
    value: str = call.arguments[key]
    parts = value.split("/")
    if not value or not all(re.fullmatch(_SEGMENT, p) for p in parts if p) or "//" in value:
        return []
    others = sorted(k for k in props if k != key)
    free = {k: _value_regex(props[k]) for k in others}
    if any(r is None for r in free.values()):
        return []  # an argument of another kind could carry anything: no path scope

    def rule(value_regex: str) -> str:
        before = "".join(rf'(?:"{re.escape(k)}":{free[k]},)?' for k in others if k < key)
        after = "".join(rf'(?:,"{re.escape(k)}":{free[k]})?' for k in others if k > key)
        return rf'^\{{{before}"{re.escape(key)}":"{value_regex}"{after}\}}$'

    file = json.dumps(value, ensure_ascii=False)[1:-1]
    out = [Scope(f"{call.name} on the file {value}", tool, rule(re.escape(file)))]
    folder = value.rsplit("/", 1)[0] if "/" in value.rstrip("/") else ""
    if folder:
        below = rf"{re.escape(folder)}(?:/{_SEGMENT})+"
        out.append(Scope(f"{call.name} on files under {folder}/", tool, rule(below)))
    return out


def _value_regex(schema: Any) -> str | None:
    """What an argument other than the path may be, under a path scope: a plain string,
    number or boolean; or a list of objects whose fields are all such and all required (as
    editfile's edits). Anything else could carry anything: None."""
    if not isinstance(schema, dict):
        return None
    if schema.get("type") in _BY_TYPE:
        return _BY_TYPE[schema["type"]]
    items = schema.get("items")
    if schema.get("type") != "array" or not isinstance(items, dict):
        return None
    fields = items.get("properties")
    if (items.get("type") != "object" or not isinstance(fields, dict) or not fields
            or sorted(items.get("required") or []) != sorted(fields)):
        return None
    parts = []
    for k in sorted(fields):
        kind = fields[k].get("type") if isinstance(fields[k], dict) else None
        if kind not in _BY_TYPE:
            return None
        parts.append(rf'"{re.escape(k)}":{_BY_TYPE[kind]}')
    one = r"\{" + ",".join(parts) + r"\}"
    return rf"\[(?:{one}(?:,{one})*)?\]"


@dataclass
class Grant:
    """One session grant: a rule in memory, with where it came from."""

    rule: Rule
    label: str
    call: str  # the call it came from, as shown
    made: float = field(default_factory=time.time)

    @property
    def expired(self) -> bool:
        return self.rule.expires_at is not None and time.time() >= self.rule.expires_at


class SessionGrants:
    """This session's grants, in memory only: listed, applied before the config's rules
    (deny rules still win), gone with the session."""

    def __init__(self) -> None:
        self._grants: list[Grant] = []

    def add(self, scope: Scope, action: Action, call: ToolCall) -> Grant:
        expires = time.time() + scope.expires_in if scope.expires_in else None
        rule = Rule(scope.tool, action, scope.args, f"session grant {len(self._grants) + 1}",
                    expires_at=expires)
        grant = Grant(rule, scope.label, describe_call(call))
        self._grants.append(grant)
        return grant

    def listed(self) -> list[Grant]:
        """The grants still in force (expired ones drop out)."""
        self._grants = [g for g in self._grants if not g.expired]
        return list(self._grants)

    def apply(self, approval: ApprovalConfig) -> ApprovalConfig:
        rules = tuple(g.rule for g in self.listed())
        if not rules:
            return approval
        return replace(approval, rules=(*rules, *approval.rules))  # (its mode kept)

    def remove(self, grant: Grant) -> None:
        self._grants = [g for g in self._grants if g is not grant]

    def clear(self) -> None:
        self._grants = []


def describe_call(call: ToolCall, limit: int = 200) -> str:
    text = f"{call.name} {canonical_json(call.arguments)}"
    return text if len(text) <= limit else text[: limit - 1] + "…"
