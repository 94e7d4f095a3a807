"""The project's `.prompt` files as MCP prompts, for `kep mcp serve`.

A prompt's variables (its params, with their defaults, and every `<<name>>` it reads without
defining) are its arguments. Getting a prompt substitutes the arguments into the author's
text of its `.system`, `.user`, `.assistant` and `.text` statements and returns those as
messages (MCP has no system role: a `.system` text is a user message). Nothing runs: the
statements that call tools, run commands or read files (`.cmd`, `.exec`, `.include`,
`.image`…) are left out, and a prompt that needs a value only a run would set is refused
with a message saying so.

A prompt whose name or argument names hold control characters (or are empty or longer than
NAME_LIMIT) is not served: a client shows those names, and kep must not be the way an escape
sequence reaches a screen.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp.types as types
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from tuiapp.conversation import prompt_file, prompt_variables
from tuiapp.conversation.prompt_model import PromptError, PromptFile
from tuiapp.security import display

NAME_LIMIT = 128
ROLES = {".system": "user", ".user": "user", ".assistant": "assistant"}


def _servable_name(name: str) -> bool:
    return 0 < len(name) <= NAME_LIMIT and name.isprintable()


class ProjectPrompts:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _files(self) -> dict[str, PromptFile]:
        out: dict[str, PromptFile] = {}
        for path in prompt_file.list_prompts(self.root):
            try:
                pf = prompt_file.load(path, self.root)
            except PromptError:  # `kep run --prompt` reports it; a client just sees it absent
                continue
            names = [pf.name, *(v.name for v in prompt_variables.variables(pf))]
            if all(isinstance(n, str) and _servable_name(n) for n in names):
                out.setdefault(pf.name, pf)
        return out

    def list(self) -> list[types.Prompt]:
        return [types.Prompt(name=name, description=_description(pf), arguments=[
            types.PromptArgument(name=v.name, required=not v.has_default,
                                 description=(f"default: {display.printable_line(str(v.default))}"
                                              if v.has_default else None))
            for v in prompt_variables.variables(pf)])
            for name, pf in self._files().items()]

    def get(self, name: str, arguments: dict[str, str]) -> types.GetPromptResult:
        pf = self._files().get(name)
        if pf is None:
            raise MCPError(INVALID_PARAMS, f"no prompt named {name!r}")
        missing = [v.name for v in prompt_variables.missing(pf, arguments)]
        if missing:
            raise MCPError(INVALID_PARAMS, f"prompt {name!r} needs: {', '.join(missing)}")
        values: dict[str, Any] = {**pf.params, **arguments}
        parts: list[tuple[str, str]] = []
        for st in pf.statements:
            role = ROLES.get(st.keyword)
            if role is None and st.keyword != ".text":
                continue  # nothing runs for a client: no tools, commands or files
            try:
                text = prompt_variables.substitute(st.value, values)
            except prompt_variables.UndefinedVariable as e:
                raise MCPError(INVALID_PARAMS, f"prompt {name!r} uses <<{e.name}>>, which is "
                                               "only set while kep runs it") from None
            if role is None and parts:  # `.text` adds to the message before it
                parts[-1] = (parts[-1][0], parts[-1][1] + "\n" + text)
            else:
                parts.append((role or "user", text))
        messages = [types.PromptMessage(role=role,  # type: ignore[arg-type]
                                        content=types.TextContent(type="text", text=text))
                    for role, text in parts]
        return types.GetPromptResult(description=_description(pf), messages=messages)


def _description(pf: PromptFile) -> str:
    given = pf.meta.get("description")
    text = given if isinstance(given, str) and given else f"prompts/{pf.path.name}"
    return display.printable_line(text)
