"""argv → one of: tui | run | functions | call | new | init | trust | mcp | sessions | config |
rules | sandbox | help.

Every flag of every subcommand is declared here (one place for the CLI contract); the work is
done by tuiapp.commands.<name>.main(args), imported only when that subcommand runs so that
`kep --version` and the warm paths stay fast.
"""

from __future__ import annotations

import importlib
import sys

from tuiapp import __version__

# Not from typing: `kep --version` imports nothing it does not need (typing alone costs more
# than answering). argparse is imported where a parser is built.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import Any, NoReturn

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
# Commands that start processes. `functions` arms itself, only when it must run something.
TOOL_RUNNING = {"tui", "run", "call", "mcp", "sandbox"}


# Flags accepted both before and after a subcommand. Below the top level their default is
# SUPPRESS, so `kep --project X run` is not reset by run's own (absent) --project.


def _common(p: argparse.ArgumentParser, top: bool = False) -> None:
    import argparse

    p.add_argument(
        "--project",
        metavar="DIR",
        default=None if top else argparse.SUPPRESS,
        help="project root (default: nearest dir with kep.toml or prompts/)",
    )
    p.add_argument(
        "--trust",
        action="store_true",
        default=False if top else argparse.SUPPRESS,
        help="trust the project for this run only (see `kep trust`)",
    )
    p.add_argument(
        "--mode",
        choices=("read-only", "ask", "auto", "yolo"),  # tuiapp.core.modes.MODES, not imported
        default=None if top else argparse.SUPPRESS,
        help="approval mode for this run: read-only, ask (default), auto, yolo",
    )


def _session_flags(p: argparse.ArgumentParser, top: bool = False) -> None:
    import argparse

    d = {} if top else {"default": argparse.SUPPRESS}
    p.add_argument("--model", "-m", metavar="M", help="PROVIDER/MODEL, or offline", **d)
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--continue",
        "-c",
        dest="continue_",
        action="store_true",
        help="resume the latest session of this project",
        **d,
    )
    g.add_argument("--session", metavar="ID", help="resume session ID", **d)
    p.add_argument(
        "--fork",
        action="store_true",
        help="with --continue/--session: continue in a copy (the original stays as it is)",
        **d,
    )
    p.add_argument("--prompt", metavar="NAME", help="start from prompts/NAME.prompt", **d)
    p.add_argument("--agent", metavar="NAME", help="start with agents/NAME (llm-functions)", **d)
    p.add_argument(
        "--set",
        metavar="K=V",
        action="append",
        dest="set_vars",
        help="set a prompt or agent variable (repeatable)",
        **(d or {"default": []}),
    )


COMMANDS = ("run", "functions", "call", "new", "init", "trust", "mcp", "sessions", "config",
            "rules", "sandbox", "help")


class _Retry(Exception):
    """A parser built for some subcommands only met something it cannot judge."""


class _Skipped:
    """Stands in for the parser of a subcommand that is not built: takes every call, keeps
    nothing."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self


class _Some:
    """The subparsers action, adding only the subcommands in `only`."""

    def __init__(self, sub: Any, only: set[str]) -> None:
        self.sub, self.only = sub, only

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        return self.sub.add_parser(name, **kwargs) if name in self.only else _Skipped()


def build_parser(only: set[str] | None = None) -> argparse.ArgumentParser:
    """The whole CLI; with `only`, just those subcommands (building all of them costs more
    than a warm `kep functions` does on its own), and then any parse error raises _Retry so
    that the whole parser gives the user its real message."""
    import argparse

    parser_class = argparse.ArgumentParser
    if only is not None:
        class _Fixed(argparse.HelpFormatter):
            # argparse formats while building (to check metavars): a terminal width lookup
            # imports shutil, and this parser never prints help
            def __init__(self, prog: str, *args: Any, **kwargs: Any) -> None:
                super().__init__(prog, *args, **{**kwargs, "width": 80})

        class _Partial(argparse.ArgumentParser):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **{**kwargs, "formatter_class": _Fixed})

            def error(self, message: str) -> NoReturn:
                raise _Retry(message)

        parser_class = _Partial
    parser = parser_class(
        prog="kep",
        description="A terminal chat for LLMs with function calling. "
        "With no subcommand, opens the TUI.",
    )
    parser.add_argument("--version", action="version", version=f"kep {__version__}")
    _common(parser, top=True)
    _session_flags(parser, top=True)
    sub: Any = parser.add_subparsers(dest="command", metavar="COMMAND")
    if only is not None:
        sub = _Some(sub, only)

    p = sub.add_parser("run", help="headless: one prompt, reply streamed to stdout")
    _common(p)
    _session_flags(p)
    p.add_argument("text", nargs="?", metavar="PROMPT", help="the prompt (default: stdin)")
    p.add_argument(
        "--yes", "-y", action="store_true", help="allow calls the policy would ask about"
    )
    p.add_argument("--json", action="store_true", help="print one JSON event per line")
    p.add_argument("--show-system", action="store_true", help="print the system prompt and exit")

    p = sub.add_parser("functions", help="list the tools kep found")
    _common(p)
    p.add_argument("--json", action="store_true", help="a JSON array")
    p.add_argument("--watch", action="store_true", help="print each registry change as it happens")
    p.add_argument(
        "--light-schema", action="store_true", help="print extension packs' Light Schema"
    )
    p.add_argument("--check", action="store_true",
                   help="run the protocol checklist on this project's tools (exit 2: errors)")
    p.add_argument("--strict", action="store_true", help="with --check: warnings exit 1")

    p = sub.add_parser("sandbox", help="run a command behind the project's sandbox walls")
    _common(p)
    p.add_argument("--explain", action="store_true",
                   help="print the resolved profile and the mechanism, run nothing")
    p.add_argument("--network", action="store_true",
                   help="allow every host for this run, through kep's proxy (logged)")
    p.add_argument("--write", action="append", default=[], metavar="PATH",
                   help="also writable for this run (repeatable)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ARGS",
                   help="the command to run")

    p = sub.add_parser("call", help="run one tool directly")
    _common(p)
    p.add_argument("name", metavar="NAME")
    p.add_argument(
        "arguments",
        nargs="*",
        metavar="ARG",
        help="a JSON object, or words as the offline model takes them: key=value, then the "
        "rest in parameter order (default: JSON on stdin)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON result object")

    p = sub.add_parser("new", help="write a new tool from a template, where kep finds it")
    _common(p)
    p.add_argument("name", metavar="NAME", help="the tool's name, e.g. word_count")
    p.add_argument("--format", default="keprompt",
                   choices=("keprompt", "llm-functions", "loki", "extension", "aitool"))
    p.add_argument("--lang", choices=("python", "bash"), default=None,
                   help="python or bash, where the format has both")

    p = sub.add_parser("init", help="copy the built-in functions into this project for editing")
    _common(p)
    p.add_argument("--force", action="store_true", help="overwrite files that exist")

    p = sub.add_parser("trust", help="trust a project folder: its tools, servers and kep.toml")
    _common(p)
    p.add_argument("dir", nargs="?", metavar="DIR", help="the folder (default: this project)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--list", action="store_true", help="list the trusted folders")
    g.add_argument("--forget", action="store_true", help="stop trusting DIR")

    p = sub.add_parser("mcp", help="MCP server")
    msub = p.add_subparsers(dest="mcp_command", metavar="ACTION", required=True)
    s = msub.add_parser("serve", help="serve this project's tools and prompts over MCP "
                                      "(stdio, or HTTP with --http)")
    _common(s)
    s.add_argument("--allow-ask", action="store_true", help="also serve tools whose rule says ask")
    s.add_argument("--http", metavar="HOST:PORT",
                   help="serve Streamable HTTP on HOST:PORT behind a bearer token")
    s.add_argument("--allow-remote", action="store_true",
                   help="with --http: allow a non-loopback address")
    s.add_argument("--resources", action="store_true",
                   help="also serve the project's files as resources (read-only)")
    s = msub.add_parser("login", help="log in to an HTTP MCP server with OAuth (prints the URL)")
    _common(s)
    s.add_argument("name", metavar="NAME", help="the server's name in mcp.json or kep.toml")
    s = msub.add_parser("logout", help="forget the OAuth tokens kep keeps for a server")
    _common(s)
    s.add_argument("name", metavar="NAME", help="the server's name in mcp.json or kep.toml")

    p = sub.add_parser("sessions",
                       help="list, show, export, fork, undo, rename, delete or prune sessions")
    _common(p)
    ssub = p.add_subparsers(dest="sessions_command", metavar="ACTION")
    s = ssub.add_parser("list", help="list sessions (default)")
    _common(s)
    s.add_argument("--all", action="store_true", help="every project, not only this one")
    s = ssub.add_parser("show", help="print a session")
    _common(s)
    s.add_argument("id", metavar="ID")
    s = ssub.add_parser("export", help="export a session")
    _common(s)
    s.add_argument("id", metavar="ID")
    s.add_argument("--format", choices=("md", "json"), default="md")
    s.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")
    s = ssub.add_parser("delete", help="delete sessions and their tool output")
    _common(s)
    s.add_argument("ids", nargs="+", metavar="ID")
    s = ssub.add_parser("prune", help="delete sessions not updated for a while")
    _common(s)
    s.add_argument("--older-than", required=True, metavar="AGE", help="e.g. 30d, 12h, 2w")
    s.add_argument("--dry-run", action="store_true", help="list what would go, delete nothing")
    s.add_argument("--all", action="store_true", help="every project, not only this one")
    s = ssub.add_parser("fork", help="a new session holding a session's first N messages")
    _common(s)
    s.add_argument("id", metavar="ID")
    s.add_argument("--at", type=int, required=True, metavar="N", help="messages to keep")
    s = ssub.add_parser("undo", help="put back the files the session's last file write changed")
    _common(s)
    s.add_argument("id", metavar="ID")
    s = ssub.add_parser("search", help="find messages in every session (best first)")
    _common(s)
    s.add_argument("words", nargs="+", metavar="WORDS")
    s.add_argument("--all", action="store_true", help="every project, not only this one")
    s.add_argument("--json", action="store_true", help="print the hits as JSON")
    s.add_argument("--limit", type=int, default=20, metavar="N", help="at most N hits (20)")
    s = ssub.add_parser("rename", help="give a session a title")
    _common(s)
    s.add_argument("id", metavar="ID")
    s.add_argument("title", nargs="+", metavar="TITLE")

    p = sub.add_parser("config", help="where the config is, and what it says")
    _common(p)
    csub = p.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    _common(csub.add_parser("path", help="print the config files kep reads"))
    _common(csub.add_parser("show", help="print the merged config (secrets masked)"))

    p = sub.add_parser("rules", help="the approval rules in force: list them, test a call")
    _common(p)
    rsub = p.add_subparsers(dest="rules_command", metavar="ACTION", required=True)
    s = rsub.add_parser("list", help="every rule with its file and line")
    _common(s)
    s.add_argument("--json", action="store_true", help="a JSON array")
    s = rsub.add_parser("test", help="the verdict for a call and the rule that decides it "
                        "(exit 0 allow, 1 ask, 2 deny, 3 bad input or config)")
    _common(s)
    s.add_argument("tool", metavar="TOOL")
    s.add_argument("arguments", nargs="?", default="{}", metavar="JSON")
    p = sub.add_parser("help", help="the documentation's topics, or one of them (also F1 in kep)")
    p.add_argument("topic", nargs="*", metavar="TOPIC", help="a topic, or words to look for")
    return parser


# `kep functions [--json] [--project DIR] [--trust]` is what editors and scripts run again and
# again: its namespace is read here without argparse, whose import and parser cost about as
# much as a warm listing. Anything else (an abbreviation, another flag) goes to argparse.
# Tests check that both read every such argv the same.
_TOP_DEFAULTS: dict[str, object] = {
    "project": None, "trust": False, "mode": None, "model": None, "continue_": False,
    "session": None, "fork": False, "prompt": None, "agent": None, "set_vars": []}
_FUNCTIONS_DEFAULTS = {"json": False, "watch": False, "light_schema": False, "check": False,
                       "strict": False}


def quick_parse(argv: list[str]) -> argparse.Namespace | None:
    values: dict[str, object] = {**_TOP_DEFAULTS, "set_vars": []}
    command = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "functions" and not command:
            command = True
            values.update(command="functions", **_FUNCTIONS_DEFAULTS)
        elif arg == "--json" and command:
            values["json"] = True
        elif arg == "--trust":
            values["trust"] = True
        elif arg.startswith("--project="):
            values["project"] = arg.partition("=")[2]
        elif arg == "--project" and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            i += 1
            values["project"] = argv[i]
        else:
            return None
        i += 1
    if not command:
        return None
    from types import SimpleNamespace

    return SimpleNamespace(**values)  # type: ignore[return-value]


def parse(argv: list[str]) -> argparse.Namespace:
    """argv parsed by a parser holding only the subcommands named in it; anything that parser
    rejects (or a request for help, which lists every subcommand) goes to the whole one."""
    if "-h" not in argv and "--help" not in argv:
        try:
            return build_parser({a for a in argv if a in COMMANDS}).parse_args(argv)
        except _Retry:
            pass
    return build_parser().parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    if (sys.argv[1:] if argv is None else list(argv)) == ["--version"]:
        print(f"kep {__version__}")  # without building the parser: the quickest answer
        return EXIT_OK
    words = sys.argv[1:] if argv is None else list(argv)
    args = quick_parse(words)
    if args is not None and args.json and not args.trust:
        from tuiapp.tools.listing_snapshot import lookup

        saved = lookup(args.project)  # the last listing, when nothing it came from changed
        if saved is not None:
            try:
                sys.stdout.flush()
                sys.stdout.buffer.write(saved)
                sys.stdout.buffer.flush()
            except BrokenPipeError:
                sys.stderr.close()
            return EXIT_OK
    args = args or parse(words)
    command = args.command or "tui"
    if command in TOOL_RUNNING:
        from tuiapp.tools import lifetime

        lifetime.arm()  # before anything is spawned: nothing it starts outlives kep
    module = importlib.import_module(f"tuiapp.commands.{command}")
    try:
        return int(module.main(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away (`kep … | head`): not an error
        return EXIT_OK
    except RuntimeError as e:
        if "can't start new thread" not in str(e):
            raise
        # A process limit used up (a tool forking without end): one line, not a traceback.
        print("kep: cannot start a thread: too many processes or threads (a tool may be "
              "forking without limit)", file=sys.stderr)
        return 1
    except Exception as e:
        if type(e).__module__ != "sqlite3":  # (sqlite3 is not imported on the fast path)
            raise
        # The session database failed where a command did not expect it (a full disk, a
        # read-only or locked file): one line for every command, never a traceback.
        from tuiapp.conversation.store_schema import default_path

        print(f"kep: the session database {default_path()} failed: {e} (is the disk full, "
              "or the file read-only?)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
