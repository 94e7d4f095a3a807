"""What a submitted prompt line does before anything is sent: a `/command` runs (a built-in,
or a user command from a `.prompt` file or an MCP prompt), a `!line` runs in the sandbox,
`//…` and `!!…` send the text with one character less, `/call …` (the offline model's
syntax for a tool call) is sent as typed, anything else is a message.

A line that is not a message never reaches the model: an unknown command or bad arguments
are one line, and the typed text goes back into the prompt so nothing is lost.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from tuiapp.project import slash
from tuiapp.ui.literal import say
from tuiapp.ui.slash.builtins import BUILTINS

if TYPE_CHECKING:
    from tuiapp.ui.app_api import KepApp


WARN: dict[str, Any] = {"title": "Command", "severity": "warning", "timeout": 8}


def user_commands(app: KepApp) -> list[slash.UserCommand]:
    try:
        return slash.user_commands(app.ws, BUILTINS)
    except OSError:
        return []


async def handle(app: KepApp, text: str) -> str | None:
    """The text to send as a message, or None when the line was kep's own (done here)."""
    line = slash.parse(text)
    if line.kind == "text":
        return line.text
    if line.kind == "shell":
        from tuiapp.ui.slash.shell import run_line

        if not line.text:
            _give_back(app, text)
            app.notify(say("Type a command after ! (!! sends a line starting !)."), **WARN)
        else:
            run_line(app, line.text)
        return None
    if not line.name:
        _give_back(app, text)
        app.notify(say("Type a command after / (// sends a line starting /)."), **WARN)
        return None
    if line.name == "call" and "call" not in BUILTINS:
        return text  # `/call NAME {…}`: the offline model's own way to call a tool, sent as is
    found = BUILTINS.get(line.name)
    if found is not None:
        result = found.run(app, line.args)
        if inspect.isawaitable(result):
            await result
        return None
    for cmd in user_commands(app):
        if cmd.name == line.name and not cmd.shadowed:
            _start(app, cmd, text, line.args)
            return None
    _give_back(app, text)
    app.notify(say("Unknown command /{}: type / for the list, // to send the line as text.",
                   line.name), **WARN)
    return None


def _give_back(app: KepApp, text: str) -> None:
    """The typed text back in the prompt (nothing sent, nothing lost); the caller says why
    in one line."""
    prompt = app.query_one("#prompt")  # (by id: ui/widgets may import this package)
    if not prompt.text:
        prompt.load_text(text)
        prompt.move_cursor(prompt.document.end)


def _start(app: KepApp, cmd: slash.UserCommand, text: str, args: str) -> None:
    """A user command: its prompt starts a new session with the typed values (the form asks
    for any still missing), as the palette's `Prompt: NAME` does."""
    from tuiapp.conversation.prompt_model import PromptError
    from tuiapp.project.session_start import StartError, prepare

    if app.busy:
        _give_back(app, text)
        app.notify(say("kep is still answering: Esc interrupts it first."), **WARN)
        return
    try:
        values = slash.bind(args, cmd.params, free=cmd.source == "mcp")
        missing = [p.name for p in cmd.params if p.default is None and p.name not in values]
        if cmd.source == "mcp" and missing:  # (no form for a server's prompt: say what)
            raise slash.SlashError(f"it needs {', '.join(missing)}: /{cmd.name} {cmd.usage}")
        plan = prepare(app.ws, prompt=cmd.ref, sets=values)
    except (slash.SlashError, StartError, PromptError) as e:
        _give_back(app, text)
        app.notify(say("/{}: {}", cmd.name, e), **WARN)
        return
    app.begin_plan(plan, ask=False)
