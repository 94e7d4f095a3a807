"""`<<var>>` substitution in keprompt `.prompt` files, once and on the author's text only,
and which variables a file reads without defining them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from tuiapp.conversation.prompt_calls import parse_cmd
from tuiapp.conversation.prompt_model import PromptFile, Statement, Variable

# Statements whose text is the author's template (substituted when the statement runs).
SUBSTITUTED = {".system", ".user", ".assistant", ".text", ".set", ".include", ".image", ".print",
               ".tool_result"}
BUILTIN_VARIABLES = {"Prefix", "Postfix", "VM", "last_response"}
DEFAULT_PREFIX, DEFAULT_POSTFIX = "<<", ">>"


class UndefinedVariable(KeyError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def variable_pattern(prefix: str, postfix: str) -> re.Pattern[str]:
    return re.compile(re.escape(prefix) + r"([A-Za-z_][\w.-]*)" + re.escape(postfix))


def render_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def lookup(name: str, values: Mapping[str, Any]) -> Any:
    """`a` or `a.b.c` (dict access into a JSON param)."""
    head, *rest = name.split(".")
    if head not in values:
        raise UndefinedVariable(name)
    value = values[head]
    for key in rest:
        if not isinstance(value, dict) or key not in value:
            raise UndefinedVariable(name)
        value = value[key]
    return value


def substitute(text: str, values: Mapping[str, Any]) -> str:
    """Replace `<<name>>` once, left to right. Inserted values are never scanned again, so a
    value holding `<<x>>` (a model reply, a file) comes through as it is."""
    pattern = variable_pattern(str(values.get("Prefix", DEFAULT_PREFIX)),
                               str(values.get("Postfix", DEFAULT_POSTFIX)))
    return pattern.sub(lambda m: render_value(lookup(m.group(1), values)), text)


def references(text: str, prefix: str = DEFAULT_PREFIX,
               postfix: str = DEFAULT_POSTFIX) -> list[str]:
    return [m.group(1) for m in variable_pattern(prefix, postfix).finditer(text)]


def statement_templates(pf: PromptFile, st: Statement) -> list[str]:
    """The author text of a statement that gets substituted."""
    if st.keyword in SUBSTITUTED:
        if st.keyword == ".set":
            return [st.value.partition(" ")[2]]
        if st.keyword == ".tool_result":
            return [st.value.partition("\n")[2]]
        return [st.value]
    if st.keyword == ".cmd":
        return [v for v in parse_cmd(pf, st).arguments.values() if isinstance(v, str)]
    return []


def free_variables(pf: PromptFile) -> dict[str, int]:
    """Names the file reads but never defines (→ line of first use). Params count as defined
    only through Variable defaults, so they are left out here by the caller."""
    defined = set(BUILTIN_VARIABLES) | set(pf.params)
    for st in pf.statements:
        if st.keyword == ".set":
            defined.add(st.value.partition(" ")[0])
        elif st.keyword == ".cmd" and parse_cmd(pf, st).target:
            defined.add(parse_cmd(pf, st).target or "")
    free: dict[str, int] = {}
    prefix, postfix = DEFAULT_PREFIX, DEFAULT_POSTFIX
    for st in pf.statements:
        for text in statement_templates(pf, st):
            for ref in references(text, prefix, postfix):
                root = ref.split(".")[0]
                if root not in defined:
                    free.setdefault(root, st.line)
        if st.keyword == ".set":
            name, _, val = st.value.partition(" ")
            if name == "Prefix":
                prefix = val.strip()
            elif name == "Postfix":
                postfix = val.strip()
    return free


KEPROMPT_SETTINGS = {"model", "llm_options"}  # params keprompt reads itself; kep does not


def variables(pf: PromptFile) -> list[Variable]:
    """What a user can set: every param (with its default), then every `<<name>>` the file
    reads that nothing in the file defines (no default: must be given). keprompt's own
    `model`/`llm_options` params are left out unless the text uses them."""
    used = {ref.split(".")[0] for st in pf.statements
            for text in statement_templates(pf, st) for ref in references(text)}
    out = {k: Variable(k, v, True) for k, v in pf.params.items()
           if k not in KEPROMPT_SETTINGS or k in used}
    for name, line in free_variables(pf).items():
        out.setdefault(name, Variable(name, line=line))
    return list(out.values())


def missing(pf: PromptFile, values: Mapping[str, Any]) -> list[Variable]:
    return [v for v in variables(pf) if not v.has_default and v.name not in values]
