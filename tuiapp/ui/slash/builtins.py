"""The built-in slash commands: one table of name, arguments, description and handler.

Each handler runs what the key or palette entry of the same name runs (the app's own
action), with the text after the name as `args`. To add a command, add one `@builtin(...)`
function here (or in a module imported at the end of this one); the completion list, /help's
list, dispatch and the docs test all read BUILTINS.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tuiapp.ui.literal import say

if TYPE_CHECKING:
    from tuiapp.ui.app_api import KepApp

Handler = Callable[["KepApp", str], "Awaitable[None] | None"]


@dataclass(frozen=True)
class Builtin:
    name: str
    description: str
    run: Handler
    usage: str = ""  # its arguments, as the completion list shows them ("[NAME]")


BUILTINS: dict[str, Builtin] = {}


def builtin(name: str, description: str, usage: str = "") -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        BUILTINS[name] = Builtin(name, description, fn, usage)
        return fn
    return register


def _no_args(app: KepApp, name: str, args: str) -> bool:
    """True (and one line said) when a command that takes nothing was given something."""
    if args.strip():
        app.notify(say("/{} takes no arguments.", name), title="Command", severity="warning")
        return True
    return False


@builtin("model", "switch model (no name: pick one)", "[PROVIDER/MODEL]")
def _model(app: KepApp, args: str) -> None:
    name = args.strip()
    app.switch_model(name) if name else app.choose_model()


@builtin("mode", "approval mode: read-only, ask, auto or yolo (no name: pick one)", "[MODE]")
def _mode(app: KepApp, args: str) -> None:
    from tuiapp.security import modes

    wanted = args.strip()
    if not wanted:
        app.choose_mode()
    elif wanted in modes.MODES:
        app.set_mode(wanted)
    else:
        app.notify(say("No approval mode {}: {}.", wanted, ", ".join(modes.MODES)),
                   title="Command", severity="warning")


@builtin("compact", "summarise the conversation so far and go on from the summary")
def _compact(app: KepApp, args: str) -> Any:
    return None if _no_args(app, "compact", args) else app.action_compact()


@builtin("clear", "start a new session (the current one stays saved)")
def _clear(app: KepApp, args: str) -> Any:
    return None if _no_args(app, "clear", args) else app.action_new_session()


@builtin("sessions", "open a past session of this project")
def _sessions(app: KepApp, args: str) -> Any:
    return None if _no_args(app, "sessions", args) else app.action_open_session()


@builtin("rules", "every approval rule in force")
def _rules(app: KepApp, args: str) -> Any:
    return None if _no_args(app, "rules", args) else app.action_show_rules()


@builtin("functions", "open or close the functions panel")
def _functions(app: KepApp, args: str) -> Any:
    return None if _no_args(app, "functions", args) else app.action_toggle_functions()


@builtin("trust", "ask the folder trust question again")
def _trust(app: KepApp, args: str) -> None:
    from tuiapp.project import inventory
    from tuiapp.ui.screens.trust import ask_again

    if _no_args(app, "trust", args):
        return
    if inventory.question(app.ws.config) is None:
        app.notify("Nothing to decide: this folder is trusted, or has nothing to trust.",
                   title="Trust")
        return
    ask_again(app)


@builtin("theme", "pick a theme (saved to config)", "[NAME]")
def _theme(app: KepApp, args: str) -> None:
    name = args.strip()
    if not name:
        app.choose_theme()
    elif name in app.available_themes:
        app.set_theme(name)
    else:
        app.notify(say("No theme {}; /theme lists them.", name), title="Theme",
                   severity="warning")


@builtin("export", "save this conversation as Markdown")
def _export(app: KepApp, args: str) -> Any:
    return None if _no_args(app, "export", args) else app.action_export_session()


@builtin("copy", "copy the selected text, else the last reply")
def _copy(app: KepApp, args: str) -> Any:
    return None if _no_args(app, "copy", args) else app.action_copy_reply()


@builtin("help", "kep's topic pages (a topic: that page)", "[TOPIC]")
def _help(app: KepApp, args: str) -> None:
    from tuiapp import docs

    topic = args.strip() or "overview"
    if docs.path(topic) is None:
        app.notify(say("No help topic {}: {}.", topic, ", ".join(t for t, _ in docs.TOPICS)),
                   title="Help", severity="warning")
        return
    app.action_help(topic)


@builtin("quit", "quit kep")
def _quit(app: KepApp, args: str) -> Any:
    return None if _no_args(app, "quit", args) else app.action_quit()
