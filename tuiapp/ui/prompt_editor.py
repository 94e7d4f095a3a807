"""The message box in the user's own editor ($VISUAL, else $EDITOR): `ctrl+x ctrl+e` (or the
`external_editor` key of `[keys]`). The editor is the user's program on the user's terminal,
so it runs outside the tool walls, started through the sandbox module's one unconfined door
(as the workbench's editor is); kep's screen is suspended while it runs. The text goes
through a private temporary file, deleted afterwards."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from tuiapp.security import project_files
from tuiapp.security.sandbox import spawn
from tuiapp.ui.focus import focus_now
from tuiapp.ui.literal import say
from tuiapp.ui.workbench_actions import editor_command

CAP = 4 * 1024 * 1024  # bytes read back: a message, not a data file


def edit_prompt(app: Any, prompt: Any) -> None:
    from textual.app import SuspendNotSupported

    command = editor_command()
    if command is None:
        app.notify("Set $VISUAL or $EDITOR to edit the message in your editor.",
                   title="Editor", severity="warning")
        return
    fd, name = tempfile.mkstemp(prefix="kep-message-", suffix=".md")  # 0600, created new
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(prompt.text)
        try:
            with app.suspend():
                done = spawn.run_unconfined([*command, name], "editor")
        except SuspendNotSupported:
            app.notify("No terminal to hand over to an editor here.", title="Editor",
                       severity="warning")
            return
        except OSError as e:
            app.notify(say("Could not start {}: {}", command[0], e.strerror or e),
                       title="Editor", severity="warning")
            return
        if done.returncode != 0:
            app.notify(say("{} exited with {}: the message is as it was.", command[0],
                           done.returncode), title="Editor", severity="warning")
            return
        try:
            text = project_files.read_text(name, CAP, errors="replace") or ""
        except project_files.ProjectFileError as e:
            app.notify(say("The message is as it was: {}", e), title="Editor",
                       severity="warning")
            return
    finally:
        try:
            os.unlink(name)
        except OSError:
            pass
    prompt.load_text(text.removesuffix("\n"))
    prompt.move_cursor(prompt.document.end)
    focus_now(prompt)
