"""Regenerate screenshots/*.svg: `python -m tuiapp.ui.screenshots [--out DIR]`.

Headless, at a fixed size, on the offline model, in a throw-away demo project with its own
config/data/cache dirs, so nothing of the user's setup shows. API keys and base URLs are removed
from the environment first: no secret can reach a screenshot. Scenes:

  first-run.svg          the welcome screen when no key is configured
  chat.svg               a chat with a streamed answer
  functions.svg          the functions panel, with a broken tool and its reason
  approval.svg           a pending tool call waiting for y / n / a / d / e
  tool-pane.svg          the tool's output streaming into its side pane
  workbench.svg          the workbench: a tool's form, a run's output, earlier runs
  diff-approval.svg      an editfile call waiting, with the diff it would write
  rules.svg              the rules screen: every rule, its file and what it decided
  sandbox-denial.svg     a tool stopped by the sandbox, and the offer to widen the wall
                         (only where the sandbox runs; said on stderr otherwise)
  theme-<name>.svg       the finished exchange in each bundled theme
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

SIZE = (120, 36)
SECRET_ENV = re.compile(r"(API_KEY|TOKEN|SECRET|PASSWORD|_BASE_URL)$|^LLM_MCP_", re.I)

SHOUT = '''#!/usr/bin/env python3
"""A demo tool: print a file in upper case, slowly, warning about empty lines on stderr."""
import json, sys, time
if sys.argv[1:] == ["--list-functions"]:
    print(json.dumps([{"name": "shout", "description": "Print a text file in upper case",
        "parameters": {"type": "object", "required": ["file"],
                       "properties": {"file": {"type": "string", "description": "a text file"}}}}]))
    sys.exit(0)
args = json.load(sys.stdin)
for n, line in enumerate(open(args["file"]), 1):
    if line.strip():
        print(line.rstrip("\\n").upper(), flush=True)
    else:
        print(f"shout: line {n} is empty", file=sys.stderr, flush=True)
    time.sleep(0.06)
'''

# A provider file that prints an object instead of an array: listed as broken, with the reason.
BROKEN = '''#!/bin/sh
echo '{"name": "weather", "description": "forgot the array"}'
'''

NOTES = """\
Groceries: oat milk, lemons, rye bread
Call the plumber about the kitchen tap
Book the dentist for March

Finish the quarterly report draft
Water the plants on the balcony
Reply to Sam about the weekend trip
Renew the library card
Back up the laptop

Pick up the dry cleaning
Pay the electricity bill
Plan Saturday's hike route
"""


# A demo tool that writes outside the project: the sandbox stops it (a read-only folder).
BACKUP = '''#!/usr/bin/env python3
"""A demo tool: copy a file into the system's backup folder."""
import json, shutil, sys
if sys.argv[1:] == ["--list-functions"]:
    print(json.dumps([{"name": "backup", "description": "Copy a file to /var/backups",
        "parameters": {"type": "object", "required": ["file"],
                       "properties": {"file": {"type": "string", "description": "a file"}}}}]))
    sys.exit(0)
name = json.load(sys.stdin)["file"]
try:
    shutil.copy(name, "/var/backups/" + name)
except OSError as e:
    sys.exit(f"backup: {e}")
print("copied")
'''

RULES = """\
[[approval.rules]]              # the demo's backup tool runs unasked
tool = "backup"
action = "allow"

[[approval.rules]]              # never delete recursively, however the flags are written
tool = "execcmd"
args = '\\brm\\s+([^\\s;&|]+\\s+)*(-[a-zA-Z]*[rR]|--recursive)'
action = "deny"
deny_message = "recursive deletes are not allowed here"

[[approval.rules]]
tool = "writefile|editfile"
action = "ask"
"""

EDIT = ('editfile {"filename": "notes.txt", "edits": ['
        '{"search": "oat milk", "replace": "soy milk"}, '
        '{"search": "Book the dentist for March", "replace": "Book the dentist for April"}]}')


def scrub_environment(home: Path) -> None:
    """No keys, no base URLs, and kep dirs of our own."""
    for name in list(os.environ):
        if SECRET_ENV.search(name):
            del os.environ[name]
    for var, sub in (("KEP_CONFIG_DIR", "config"), ("KEP_DATA_DIR", "data"),
                     ("KEP_CACHE_DIR", "cache"), ("KEP_STATE_DIR", "state")):
        os.environ[var] = str(home / sub)
    os.environ.pop("KEP_OFFLINE_DELAY", None)


def make_demo_project(root: Path) -> Path:
    functions = root / "prompts" / "functions"
    functions.mkdir(parents=True)
    for name, text in (("shout", SHOUT), ("weather", BROKEN)):
        (functions / name).write_text(text)
        (functions / name).chmod(0o755)
    (root / "notes.txt").write_text(NOTES)
    return root


async def _until(pilot: object, check: Callable[[], bool], what: str, timeout: float = 20) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not check():
        if loop.time() > end:
            raise TimeoutError(f"screenshots: gave up waiting for {what}")
        await pilot.pause(0.05)  # type: ignore[attr-defined]


async def take_all(project: Path, out: Path) -> list[Path]:
    from tuiapp.project import config as project_config
    from tuiapp.project.workspace import Workspace
    from tuiapp.ui.app import make_app
    from tuiapp.ui.widgets.prompt_input import PromptInput
    from tuiapp.ui.widgets.tool_panes import ToolPanes

    written: list[Path] = []

    def shot(app: object, name: str) -> None:
        app.save_screenshot(f"{name}.svg", str(out))  # type: ignore[attr-defined]
        written.append(out / f"{name}.svg")

    ws = Workspace(project_config.load(project))
    app = make_app(ws, model="offline", first_run=True)
    async with app.run_test(size=SIZE) as pilot:
        app.query_one(PromptInput).cursor_blink = False  # the cursor always shows
        await app.tools_ready.wait()
        await pilot.pause(0.3)
        shot(app, "first-run")

    ws = Workspace(project_config.load(project))
    app = make_app(ws, model="offline")
    async with app.run_test(size=SIZE) as pilot:
        app.query_one(PromptInput).cursor_blink = False
        await app.tools_ready.wait()
        idle = lambda: not app.busy  # noqa: E731
        await pilot.press(*"what can you do?")
        await pilot.press("enter")
        await pilot.pause(0.2)
        await _until(pilot, idle, "the streamed answer")
        await pilot.pause(0.3)
        shot(app, "chat")

        await pilot.press("ctrl+f")
        await pilot.pause(0.3)
        shot(app, "functions")
        await pilot.press("ctrl+f")

        await pilot.press(*"shout notes.txt")
        await pilot.press("enter")
        approval = app.approval
        # armed: on screen long enough for a key to answer it (before, keys go to the prompt)
        await _until(pilot, lambda: approval.armed, "the approval panel")
        await pilot.pause(0.1)
        shot(app, "approval")

        await pilot.press("y")
        panes = app.query_one(ToolPanes)

        def streaming() -> bool:
            pane = panes.newest()
            return pane is not None and pane.output.line_count >= 8

        await _until(pilot, streaming, "the tool's output")
        shot(app, "tool-pane")

        await pilot.pause(0.2)
        await _until(pilot, idle, "the end of the turn")
        await pilot.pause(0.3)

        app.action_toggle_panes()  # room for the workbench beside the chat
        app.open_tool("shout")
        await _until(pilot, lambda: app.bench() is not None
                     and bool(app.bench().query("#field-0")), "the workbench")
        bench = app.bench()
        assert bench is not None
        bench.query_one("#field-0").value = "notes.txt"  # type: ignore[attr-defined]
        for _ in range(2):  # two runs: the list of earlier runs shows
            bench.action_run()
            await pilot.pause(0.1)
            await _until(pilot, lambda: not bench.running, "the workbench run")
        await pilot.pause(0.3)
        shot(app, "workbench")
        bench.action_close()
        await pilot.pause(0.2)
        themes = [t for t in ("dark", "light", "high-contrast") if t in app.available_themes]
        for theme in themes:
            app.theme = theme
            await pilot.pause(0.3)
            shot(app, f"theme-{theme}")
        app.theme = "dark" if "dark" in themes else app.theme

    await _more_scenes(project, shot)
    return written


async def _more_scenes(project: Path, shot: Callable[[object, str], None]) -> None:
    """The diff of an edit waiting for an answer, the rules screen, a sandbox wall."""
    from tuiapp.project import config as project_config
    from tuiapp.project.workspace import Workspace
    from tuiapp.security import trust
    from tuiapp.security.sandbox import spawn
    from tuiapp.ui.app import make_app
    from tuiapp.ui.widgets.prompt_input import PromptInput

    # Only now: the welcome shows no config file, and the panels no backup tool.
    (project / "kep.toml").write_text(RULES)
    backup = project / "prompts" / "functions" / "backup"
    backup.write_text(BACKUP)
    backup.chmod(0o755)
    trust.trust(project)  # trusted again, with its rules
    ws = Workspace(project_config.load(project))
    app = make_app(ws, model="offline")
    async with app.run_test(size=SIZE) as pilot:
        app.query_one(PromptInput).cursor_blink = False
        await app.tools_ready.wait()
        idle = lambda: not app.busy  # noqa: E731
        app.query_one(PromptInput).insert(EDIT)
        await pilot.press("enter")
        await _until(pilot, lambda: app.approval.armed, "the diff approval")
        await pilot.pause(0.2)
        shot(app, "diff-approval")
        await pilot.press("n", "enter")  # deny, with no reason
        await _until(pilot, idle, "the end of the denied edit")

        await pilot.press("alt+r")
        await pilot.pause(0.4)
        shot(app, "rules")
        await pilot.press("escape")
        await pilot.pause(0.2)

        if not spawn.active():
            print("screenshots: no sandbox here, sandbox-denial.svg not taken", file=sys.stderr)
            return
        await pilot.press(*"backup notes.txt")
        await pilot.press("enter")
        await _until(pilot, lambda: app.approval.armed, "the offer to widen the wall")
        await pilot.pause(0.2)
        shot(app, "sandbox-denial")
        await pilot.press("n", "enter")
        await _until(pilot, idle, "the end of the backup call")


def check_no_leaks(files: list[Path], forbidden: list[str]) -> list[str]:
    """Paths of the temp dirs or the user's home must not appear in a screenshot."""
    problems = []
    for f in files:
        text = f.read_text().replace("&#160;", " ")
        for s in forbidden:
            if s and s in text:
                problems.append(f"{f.name} shows {s!r}")
    return problems


def default_out() -> Path:
    repo = Path(__file__).resolve().parents[2]
    return repo / "screenshots" if (repo / "pyproject.toml").is_file() else Path("screenshots")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tuiapp.ui.screenshots",
                                     description="Regenerate kep's screenshots (SVG), headless.")
    parser.add_argument("--out", type=Path, default=default_out(), help="output directory")
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="kep-shots-"))
    try:
        scrub_environment(tmp / "home")
        project = make_demo_project(tmp / "demo")
        from tuiapp.security import trust

        trust.trust(project)  # kep's own demo: its tools are what the screenshots show
        cwd = os.getcwd()
        os.chdir(project)  # relative paths in the UI are relative to the demo project
        try:
            files = asyncio.run(take_all(project, out))
        finally:
            os.chdir(cwd)
        problems = check_no_leaks(files, [str(tmp), os.path.expanduser("~") + "/"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in files:
        print(f"wrote {f}")
    for p in problems:
        print(f"screenshots: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
