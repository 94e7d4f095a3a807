"""argc comment tags (`# @describe`, `# @option`, `# @flag`, `# @cmd`, `# @env`, `# @meta`) →
JSON-schema declarations, and the bash prelude that runs such a script without `argc`.

Shared by the llm-functions and Loki formats (FORMATS.md §2–§3). Only text is read here: the
script itself runs later, in a child bash, with `argc` replaced by a no-op function and the
`argc_*` variables set from the call's JSON arguments.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tuiapp.tools.formats.base import ToolLoadError

_TAG = re.compile(r"^\s*#\s*@([A-Za-z][\w-]*)\s?(.*)$")
# A plain comment line that continues the text of the tag above it, as argc reads one: any run
# of `#`, at most one space or tab, then anything but an `@` tag. An empty `#` keeps the block
# going (it adds an empty line).
_CONTINUATION = re.compile(r"^#+(?:[ \t]*$|[ \t]?(?![ \t]*@)(.*)$)")
_FUNC = re.compile(r"^\s*(?:function\s+([\w:.-]+)\s*(?:\(\s*\))?|([\w:.-]+)\s*\(\s*\))\s*\{?")
# [-s] [--|-|+]name [modifier][param-value] [<NOTATION>...] description
_PARAM = re.compile(
    r"""^(?:(?P<short>-[^\s-])\s+(?=[-+]))?
        (?P<dashes>--|-|\+)?(?P<name>[A-Za-z0-9_][\w.-]*)
        (?P<mod>[!*+](?P<sep>[,:@|/])?)?
        (?P<value>=`[^`]*`|=\S*|\[[^\]]*\])?
        (?P<notations>(?:\s+<[^>]*>)*[*+?]?)
        (?:\s+(?P<desc>.*))?$""",
    re.X,
)


class ArgcError(ToolLoadError):
    """A tag argc itself would reject; the message names the line."""


@dataclass
class Param:
    """One @option/@flag: how it appears in the schema and as an argc_* variable."""

    id: str  # argc's id: long name, or the short letter
    prop: str  # schema property name (`-` → `_`)
    flag: bool = False
    multiple: bool = False
    required: bool = False
    default: str | None = None
    choices: list[str] | None = None
    notation: str | None = None
    description: str = ""

    @property
    def var(self) -> str:
        return "argc_" + re.sub(r"\W", "_", self.id)

    def schema(self) -> dict[str, Any]:
        kind = {"INT": "integer", "NUM": "number"}.get(self.notation or "", "string")
        prop: dict[str, Any]
        if self.flag:
            prop = {"type": "boolean"}
        elif self.multiple:
            items: dict[str, Any] = {"type": "string"}
            if self.choices:
                items["enum"] = list(self.choices)  # on the items, where JSON schema means it
            prop = {"type": "array", "items": items}
        else:
            prop = {"type": kind}
            if self.choices:
                prop["enum"] = list(self.choices)
        if self.description:
            prop["description"] = self.description
        return prop


@dataclass
class Command:
    """The root script (a tool) or one `@cmd` function (an agent's tool)."""

    function: str  # the bash function to call: main, or the @cmd function
    description: str = ""
    params: list[Param] = field(default_factory=list)
    line: int = 0

    @property
    def name(self) -> str:
        return self.function.replace("-", "_")

    def parameters(self) -> dict[str, Any]:
        props = {p.prop: p.schema() for p in self.params if p.id not in ("help", "version")}
        required = [p.prop for p in self.params if p.required and p.prop in props]
        out: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            out["required"] = required
        return out


@dataclass
class Script:
    root: Command
    commands: list[Command]  # @cmd functions, in file order
    required_env: list[str] = field(default_factory=list)  # @env X!
    env_defaults: dict[str, str] = field(default_factory=dict)  # @env X=default
    require_tools: list[str] = field(default_factory=list)  # @meta require-tools a,b
    has_tags: bool = False


def parse(text: str) -> Script:
    """Read every argc tag of a script. Raises ArgcError on a tag argc would reject."""
    root = Command("main")
    script = Script(root, [])
    pending: Command | None = None  # an @cmd waiting for its function definition
    target: Command = root
    last: Command | Param | None = None  # what a plain comment line continues
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _TAG.match(line)
        if m:
            script.has_tags = True
            tag, rest = m.group(1), m.group(2).strip()
            last = None
            if tag == "describe":
                root.description = rest
                last = root
            elif tag == "cmd":
                pending = Command("", rest, line=lineno)
                target = pending
                last = pending
            elif tag in ("option", "flag"):
                param = _param(rest, tag == "flag", lineno)
                target.params.append(param)
                last = param
            elif tag == "env":
                _env(rest, script, lineno)
            elif tag == "meta":
                name, _, value = rest.partition(" ")
                if name == "require-tools":
                    script.require_tools += [t for t in re.split(r"[,\s]+", value.strip()) if t]
            continue  # @arg, @alias, @version, @author …: not part of the schema
        c = _CONTINUATION.match(line) if last is not None else None
        if c:
            before = last.description  # type: ignore[union-attr]
            text = c.group(1) or ""
            if text.startswith("\\@"):  # argc's escape: a line that is not a tag
                text = text[1:]
            last.description = f"{before}\n{text}"  # type: ignore[union-attr]
            continue
        last = None
        f = _FUNC.match(line)
        if f and pending is not None:
            pending.function = f.group(1) or f.group(2)
            script.commands.append(pending)
            pending, target = None, root
    for cmd in (root, *script.commands):  # argc trims each block as a whole
        cmd.description = cmd.description.strip()
        for param in cmd.params:
            param.description = param.description.strip()
    return script


def _param(rest: str, is_flag: bool, lineno: int) -> Param:
    m = _PARAM.match(rest)
    if not m:
        raise ArgcError(f"line {lineno}: cannot read @{'flag' if is_flag else 'option'} {rest!r}")
    name = m.group("name")
    mod = (m.group("mod") or "")[:1]
    value = m.group("value") or ""
    default: str | None = None
    choices: list[str] | None = None
    if value.startswith("=`") or value.startswith("[`") or value.startswith("[?`"):
        pass  # computed by a function at run time: nothing static to declare
    elif value.startswith("="):
        default = value[1:]
    elif value.startswith("["):
        inner = value[1:-1]
        if inner.startswith("="):
            inner = inner[1:]
            default = inner.split("|")[0]
        choices = inner.split("|")
    notations = re.findall(r"<([^>]*)>", m.group("notations") or "")
    return Param(
        id=name,
        prop=name.replace("-", "_"),
        flag=is_flag,
        multiple=mod in ("*", "+") and not is_flag,
        required=mod in ("!", "+") and not is_flag,
        default=default,
        choices=choices,
        notation=notations[0] if notations else None,
        description=(m.group("desc") or "").strip(),
    )


def _env(rest: str, script: Script, lineno: int) -> None:
    m = re.match(r"^([A-Za-z_]\w*)(!)?(=\S*|\[[^\]]*\])?", rest)
    if not m:
        raise ArgcError(f"line {lineno}: cannot read @env {rest!r}")
    name, bang, value = m.group(1), m.group(2), m.group(3) or ""
    if bang:
        script.required_env.append(name)
    if value.startswith("=") and not value.startswith("=`"):
        script.env_defaults[name] = value[1:]
    elif value.startswith("[="):
        script.env_defaults[name] = value[2:-1].split("|")[0]


# ---- running without argc -------------------------------------------------------------------

def prelude(command: Command, arguments: dict[str, Any], env_defaults: dict[str, str]) -> str:
    """Bash code that makes `argc` a no-op and sets what `argc --argc-eval` would have set.

    The caller appends `source SCRIPT` and the call of `command.function`.
    """
    lines = ["argc() { :; }"]
    for name, value in env_defaults.items():
        lines.append(f': "${{{name}:={shlex.quote(value)}}}"; export {name}')
    declared = {p.prop: p for p in command.params}
    for key, value in arguments.items():
        param = declared.get(key)
        var = param.var if param else "argc_" + re.sub(r"\W", "_", key)
        if value is None:
            continue
        if isinstance(value, bool):
            if value:  # a flag is 1 when given and unset otherwise, as argc does
                lines.append(f"{var}=1")
            elif param is not None and not param.flag:
                lines.append(f"{var}=false")
            continue
        if isinstance(value, list):
            items = " ".join(shlex.quote(_word(v)) for v in value)
            lines.append(f"{var}=({items})")
            continue
        lines.append(f"{var}={shlex.quote(_word(value))}")
    for p in command.params:  # defaults of options the call left out
        if p.default is not None and p.prop not in arguments:
            lines.append(f"{p.var}={shlex.quote(p.default)}")
    return "\n".join(lines)


def _word(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    import json

    return json.dumps(value, ensure_ascii=False)


def run_data(script: Script, command: Command) -> dict[str, Any]:
    """What a spec keeps to run `command` later without re-reading the file."""
    params = [{"id": p.id, "prop": p.prop, "flag": p.flag, "multiple": p.multiple,
               "default": p.default} for p in command.params]
    return {"function": command.function, "params": params,
            "env_defaults": dict(script.env_defaults)}


def bash_program(run: dict[str, Any], arguments: dict[str, Any], is_root: bool) -> str:
    """The `bash -c` program: prelude, `source "$0"` (the script is $0), then its function."""
    command = Command(run["function"], params=[Param(**p) for p in run["params"]])
    if is_root:  # argc-eval would have called main, when the script defines one
        call = "if declare -F main >/dev/null; then main; fi"
    else:
        call = shlex.quote(command.function)
    return f'{prelude(command, arguments, run["env_defaults"])}\nsource "$0"\n{call}\n'


def check_requirements(
    script: Script, is_set: Callable[[str], bool], has_program: Callable[[str], bool]
) -> None:
    """`@env X!` unset or `@meta require-tools` naming an absent program → ToolLoadError.

    Both depend on the machine, not the file: the error is transient (never cached), so the
    next discovery checks again (a getenv and a `which`)."""
    missing_env = [v for v in script.required_env if not is_set(v) and v not in script.env_defaults]
    if missing_env:
        raise ToolLoadError(f"needs environment variable {', '.join(missing_env)} (@env …!); "
                            "set it or put it in the tools' .env", transient=True)
    missing = [t for t in script.require_tools if not has_program(t)]
    if missing:
        raise ToolLoadError(f"needs {', '.join(missing)} on PATH (@meta require-tools)",
                            transient=True)
