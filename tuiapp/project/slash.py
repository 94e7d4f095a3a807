"""What a prompt line starting `/` or `!` means, and the user's own slash commands.

`parse()` tells a message from a command (`/name args`), a shell line (`!cmd`) and the two
escapes (`//…` sends a literal `/…`, `!!…` a literal `!…`). `user_commands()` lists every
`.prompt` file (the project's prompts/ and the user config folder's) and every MCP prompt as
a command whose arguments are its variables; one whose name a built-in already has is kept
in the list, marked, and never run by that name (the built-in wins). `bind()` turns the typed
arguments into variable values. The built-ins and their handlers live with the screen
(ui/slash); no textual here.
"""

from __future__ import annotations

import shlex
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tuiapp.conversation import prompt_file, prompt_variables
from tuiapp.conversation.prompt_model import PromptError
from tuiapp.settings import paths

if TYPE_CHECKING:
    from tuiapp.project.workspace import Workspace

Kind = Literal["text", "command", "shell"]
USER_PROMPTS = "prompts"  # under the user config folder


class SlashError(Exception):
    """A command line that cannot run as typed: one line for the user, nothing sent."""


@dataclass(frozen=True)
class Line:
    """One submitted prompt line, read: a message (`text` to send), a command (`name`,
    `args`) or a shell line (`text` is the command line)."""

    kind: Kind
    text: str = ""
    name: str = ""
    args: str = ""


def parse(line: str) -> Line:
    if line.startswith("//"):
        return Line("text", line[1:])
    if line.startswith("!!"):
        return Line("text", line[1:])
    if line.startswith("/"):
        head = line[1:]
        cut = next((i for i, c in enumerate(head) if c.isspace()), len(head))
        return Line("command", name=head[:cut], args=head[cut + 1:])
    if line.startswith("!"):
        return Line("shell", line[1:].strip())
    return Line("text", line)


@dataclass(frozen=True)
class Param:
    name: str
    description: str = ""
    default: str | None = None  # None: must be given (the form asks when it is not)


@dataclass(frozen=True)
class UserCommand:
    """A `.prompt` file or an MCP prompt, offered as `/name`."""

    name: str
    description: str
    ref: str  # what session_start.prepare(prompt=…) takes: a file's path or mcp:SERVER/NAME
    params: tuple[Param, ...] = ()
    source: Literal["prompt", "user prompt", "mcp"] = "prompt"
    shadowed: bool = False  # a built-in has this name: listed, never run by it

    @property
    def usage(self) -> str:
        return " ".join(p.name if p.default is None else f"[{p.name}]" for p in self.params)


def user_prompt_dir() -> Path:
    return paths.config_dir() / USER_PROMPTS


def _prompt_files(root: Path) -> list[tuple[Path, Literal["prompt", "user prompt"]]]:
    out: list[tuple[Path, Literal["prompt", "user prompt"]]] = [
        (p, "prompt") for p in prompt_file.list_prompts(root)]
    user = user_prompt_dir()
    try:
        if user.is_dir() and user.resolve() != prompt_file.prompts_dir(root).resolve():
            out += [(p, "user prompt") for p in sorted(user.glob("*.prompt")) if p.is_file()]
    except OSError:
        pass
    return out


def _from_file(path: Path, source: Literal["prompt", "user prompt"]) -> UserCommand:
    ref = str(path.resolve()) if source == "user prompt" else path.stem
    try:
        pf = prompt_file.load(path)
    except PromptError as e:
        return UserCommand(path.stem, f"broken: {e.message} (line {e.line})", ref,
                           source=source)
    except OSError as e:
        return UserCommand(path.stem, f"unreadable: {e.strerror or e}", ref, source=source)
    params = []
    for v in prompt_variables.variables(pf):
        default = prompt_variables.render_value(v.default) if v.has_default else None
        params.append(Param(v.name, "" if v.has_default else f"used on line {v.line}",
                            default))
    desc = pf.meta.get("description")
    if not (isinstance(desc, str) and desc):
        user = next((s.value for s in pf.statements if s.keyword == ".user"), "")
        desc = user.splitlines()[0][:80] if user.strip() else f"{source} {path.name}"
    return UserCommand(path.stem, desc, ref, tuple(params), source)


def user_commands(ws: Workspace, builtins: Collection[str]) -> list[UserCommand]:
    """Every `.prompt` file and MCP prompt as a command: the project's first, then the user
    folder's, then the servers'. A later one with a name already taken is left out (the
    palette still starts it); one with a built-in's name is marked `shadowed`."""
    found: list[UserCommand] = [_from_file(p, s) for p, s in _prompt_files(ws.root)]
    mcp = getattr(ws, "mcp", None)
    for server, state in sorted(mcp.states().items()) if mcp is not None else ():
        info = {p.name: p for p in getattr(state, "prompt_info", ())}
        for name in state.prompts:
            found.append(_from_mcp(server, name, info.get(name)))
    out: dict[str, UserCommand] = {}
    for cmd in found:
        if cmd.name in out:
            continue
        if cmd.name in builtins:
            cmd = UserCommand(cmd.name, cmd.description, cmd.ref, cmd.params, cmd.source, True)
        out[cmd.name] = cmd
    return list(out.values())


def _from_mcp(server: str, name: str, info: Any) -> UserCommand:
    """A server's prompt: its description and arguments when prompts/list gave them."""
    about = f"MCP prompt of {server}"
    if info is None:
        return UserCommand(name, f"{about} (arguments: NAME=VALUE)", f"mcp:{server}/{name}",
                           source="mcp")
    params = tuple(Param(a.name, a.description, None if a.required else "")
                   for a in info.arguments if a.name)
    desc = f"{info.description} ({about})" if info.description else about
    return UserCommand(name, desc, f"mcp:{server}/{name}", params, "mcp")


def bind(args: str, params: Sequence[Param], *, free: bool = False) -> dict[str, str]:
    """The typed arguments as variable values: `NAME=VALUE` names one, other words fill the
    variables in order (the last one takes the rest of the words); quotes keep spaces, tabs
    and newlines. `free`: any NAME=VALUE is taken (an MCP prompt's server checks them)."""
    try:
        words = shlex.split(args, comments=False, posix=True)
    except ValueError as e:  # an unclosed quote
        raise SlashError(f"cannot read the arguments: {e}") from None
    names = {p.name for p in params}
    values: dict[str, str] = {}
    loose: list[str] = []
    for word in words:
        key, eq, value = word.partition("=")
        if eq and (key in names or (free and key.isidentifier())):
            values[key] = value
        else:
            loose.append(word)
    if loose:
        if free and not params:
            raise SlashError(f"give the arguments as NAME=VALUE (not {loose[0]!r})")
        open_ = [p.name for p in params if p.name not in values]
        if not open_:
            what = "no arguments" if not params else "no more arguments"
            raise SlashError(f"it takes {what} (got {loose[0]!r}; NAME=VALUE sets one)")
        for name, word in zip(open_, loose, strict=False):
            values[name] = word
        if len(loose) > len(open_):  # the last variable takes the rest of the line
            values[open_[-1]] = " ".join(loose[len(open_) - 1:])
    return values
