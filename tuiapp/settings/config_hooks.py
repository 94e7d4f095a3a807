"""`[[hooks]]` tables: commands kep runs on events (README "Hooks"), read into HookConfig.

Each entry: `event` (one of EVENTS), `command` (a string run by /bin/sh -c, or an argv
array), optional `matcher` (a regex over the tool name, for the tool events) and `timeout`
(seconds, default 10). A project's hooks count only when its kep.toml does (folder trust), and
one added after the project was trusted is held back like a new allow rule (trust_items).
"""

from __future__ import annotations

from pathlib import Path

from tuiapp.settings.config_reader import TableReader, positive_number
from tuiapp.settings.config_types import ConfigError, HookConfig

EVENTS = ("before_tool", "after_tool", "user_prompt", "session_start", "session_end",
          "approval_waiting")
DEFAULT_TIMEOUT = 10.0


def parse_hooks(r: TableReader, file: Path | str) -> tuple[HookConfig, ...]:
    hooks = []
    for i, raw in enumerate(r.get("hooks", list, []), 1):
        if not isinstance(raw, dict):
            raise ConfigError(file, f"hooks[{i}]", "expected a table")
        hr = r.child(raw, f"hooks[{i}].")
        event = hr.choice("event", EVENTS, None)
        if event is None:
            raise hr.error("event", f"required: one of {', '.join(EVENTS)}")
        command = hr.get("command", (str, list))
        if isinstance(command, str) and command.strip():
            argv: tuple[str, ...] = ("/bin/sh", "-c", command)
        elif isinstance(command, list) and command and all(
                isinstance(a, str) for a in command) and command[0]:
            argv = tuple(command)
        else:
            raise hr.error("command", "required: a command line, or an array of arguments")
        if any("\0" in a for a in argv):
            raise hr.error("command", "a NUL character can't be passed to a command")
        hooks.append(HookConfig(event, argv, hr.regex("matcher"),
                                positive_number(hr, "timeout", DEFAULT_TIMEOUT),
                                f"{Path(file).name} hook {i}"))
    return tuple(hooks)
