"""`kep call NAME [JSON | WORDS…]`: run one tool directly, as the model would, output streamed.

Arguments are a JSON object (argument or stdin), or words as the offline model takes them
(`kep call readfile notes.txt`, `kep call grep pattern=TODO path=src`).

Arguments are checked against the tool's schema before anything runs. The user typed the call,
so an `ask` rule does not ask; a `deny` rule still stands. Exit code: the tool's (124 on
timeout, 130 when interrupted); 2 for an unknown tool or invalid arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import json
import os
import shlex
import sys
from typing import Any, TextIO

from tuiapp.commands._common import fail, load_config, require_trust
from tuiapp.providers.offline import positional_arguments
from tuiapp.security import policy
from tuiapp.security.display import StreamPrintable, printable
from tuiapp.settings import paths
from tuiapp.tools.schema import arguments_error
from tuiapp.vocab.events import Event, ToolOutput
from tuiapp.vocab.messages import ToolCall

KEEP_SPOOLS = 50  # `kep call` spool files kept in the data dir


def read_arguments(words: list[str], parameters: dict[str, Any]) -> dict[str, Any]:
    """One JSON object (the words, or stdin when there are none), else offline-style words."""
    text = " ".join(words) if words else ("" if sys.stdin.isatty() else sys.stdin.read())
    if not text.strip():
        return {}
    if words and not text.lstrip().startswith(("{", "[")):
        props = parameters.get("properties") or {}
        for w in words:  # `kep call` is typed by hand: a misspelt key=… must not vanish
            key, eq, _ = w.partition("=")
            if eq and key.isidentifier() and key not in props:
                fail(f"unknown parameter {key!r}; parameters: {', '.join(props) or '(none)'}")
        return positional_arguments(shlex.join(words), parameters)
    try:
        value = json.loads(text)
    except RecursionError:
        fail("arguments are nested too deeply")
    except json.JSONDecodeError as e:
        fail(f"arguments are not valid JSON: {e.msg} at line {e.lineno} col {e.colno}")
    if not isinstance(value, dict):
        fail('arguments must be a JSON object, e.g. \'{"filename": "README.md"}\'')
    return value


def exit_code(status: str, code: int | None) -> int:
    if status == "ok":
        return 0
    if status == "timed_out":
        return 124
    if status == "cancelled":
        return 130
    if code is None:
        return 1
    return 128 - code if code < 0 else code  # killed by signal N: 128+N, as shells do


def main(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    return asyncio.run(_call(cfg, args.name, list(args.arguments), as_json=args.json))


async def _call(cfg: Any, name: str, arguments: list[str], *, as_json: bool) -> int:
    from tuiapp.project.workspace import Workspace

    ws = Workspace(cfg)
    ws.start_mcp()
    if ws.mcp is not None:  # no model here: sampling is denied, elicitation declined, said
        from tuiapp.mcp.peer import Refusing

        ws.mcp.host = Refusing(lambda text, level: print(f"kep: {printable(text)}",
                                                         file=sys.stderr))
    try:
        return await _call_in(ws, name, arguments, as_json=as_json)
    finally:
        await ws.aclose()


async def _call_in(ws: Any, name: str, words: list[str], *, as_json: bool) -> int:
    cfg, registry = ws.config, ws.registry
    await registry.refresh()
    if name not in registry.tools and ws.mcp is not None:
        # It may be an MCP server's tool. A server that does not answer is reported failed
        # only once the SDK has shut it down (about 4 s after its startup_timeout).
        with contextlib.suppress(TimeoutError):
            await ws.mcp.wait_settled(max(s.startup_timeout for s in cfg.mcp_servers.values())
                                      + 5.0 if cfg.mcp_servers else 30.0)
    spec = registry.tools.get(name)
    if spec is None:
        require_trust(cfg)  # it may be one of the project's own: say why it is not here
        named = [b for b in registry.broken if b.name == name]
        if named:  # listed, but kep cannot run it: say why, not "unknown"
            fail(f"{name} is broken and cannot be called: {named[0].error}")
        close = difflib.get_close_matches(name, list(registry.tools), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `kep functions` lists them"
        broken = [b for b in registry.broken if os.path.basename(b.source) == name
                  or (b.format == "mcp" and name.startswith(b.source.removeprefix("mcp:") + "_"))]
        if broken:
            hint += f"\n  note: {broken[0].source} is broken: {broken[0].error}"
        fail(f"unknown tool {name!r}{hint}")
    arguments = read_arguments(words, spec.parameters)
    problem = arguments_error(spec.parameters, arguments)
    if problem:
        fail(f"invalid arguments for {name}: {problem} (nothing was run)")
    call = ToolCall("call-" + os.urandom(4).hex(), name, arguments)
    verdict = policy.decide_direct(call, cfg.approval, os.environ, spec=spec)
    if verdict.action == "deny":
        fail(f"{name} denied by {verdict.why()}", 1)

    # To a terminal, tool output is foreign text (the display edge); to a pipe or a file it
    # stays byte for byte what the tool wrote.
    edges = {s: StreamPrintable() if s.isatty() else None for s in (sys.stdout, sys.stderr)}

    def shown(stream: TextIO, text: str) -> str:
        edge = edges[stream]
        return edge(text) if edge is not None else text

    def emit(event: Event) -> None:
        if as_json or not isinstance(event, ToolOutput):
            return
        stream = sys.stdout if event.stream == "stdout" else sys.stderr
        stream.write(shown(stream, event.text))
        stream.flush()

    if not as_json:
        _show_diff(spec, arguments, ws.root)
    _prune(paths.data_dir() / "spool" / "kep-call")
    from tuiapp.commands import call_checkpoint

    kept = call_checkpoint.begin(ws.root, spec, call)  # a file writer's: undo, as in `kep run`
    outcome = await ws.runner("kep-call").run(spec, call, emit)
    fin = outcome.finished
    if kept is not None:
        kept.finish(call, fin)
    if as_json:
        json.dump(
            {
                "ok": fin.status == "ok",
                "status": fin.status,
                "exit_code": fin.exit_code,
                "stdout": outcome.stdout,
                "stderr": outcome.stderr,
                "result": fin.result,  # what the model gets (e.g. $LLM_OUTPUT, not stdout)
                "duration_ms": fin.duration_ms,
                "truncated": outcome.truncated,
            },
            sys.stdout,
            ensure_ascii=False,
        )
        sys.stdout.write("\n")
    elif fin.status == "ok" and _result_not_streamed(fin.result, outcome.stdout):
        # llm-functions/Loki answer in $LLM_OUTPUT: the streamed stdout was only progress.
        sep = "" if not outcome.stdout or outcome.stdout.endswith("\n") else "\n"
        sys.stdout.write(shown(sys.stdout, f"{sep}{fin.result}\n"))
    elif fin.status in ("timed_out", "cancelled"):
        print(f"kep: {printable(fin.result.splitlines()[0])}", file=sys.stderr)
    elif fin.status == "failed" and fin.exit_code is None:
        print(f"kep: {printable(fin.result)}", file=sys.stderr)  # it never ran: say why
    return exit_code(fin.status, fin.exit_code)


def _show_diff(spec: Any, arguments: dict[str, Any], root: Any) -> None:
    """kep's file writers: the diff the approval panel shows, on stderr (stdout stays the
    tool's), each line through the display edge; coloured on a terminal."""
    from tuiapp.security.display import diff_line, terminal_diff_line
    from tuiapp.tools.file_preview import describe, preview

    p = preview(spec, arguments, root)
    if p is None:
        return
    show = terminal_diff_line if sys.stderr.isatty() else diff_line
    for line in describe(p).split("\n"):
        print(show(line), file=sys.stderr)


def _result_not_streamed(result: str, stdout: str) -> bool:
    return result.rstrip("\n") != stdout.rstrip("\n") and result != "(no output)"


def _prune(spool_dir: os.PathLike[str] | str) -> None:
    """Keep the newest KEEP_SPOOLS spool files of `kep call`."""
    try:
        files = sorted(os.scandir(spool_dir), key=lambda e: e.stat().st_mtime, reverse=True)
    except OSError:
        return
    for entry in files[KEEP_SPOOLS:]:
        try:
            os.unlink(entry.path)
        except OSError:
            pass
