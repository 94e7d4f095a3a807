"""`kep run`: one prompt, headless. The reply streams to stdout; tool activity to stderr.

Exit 0 ok, 1 provider or tool failure or an unfinished reply (refusal, max_tokens, content
filter…: the reason is on stderr, partial text stays on stdout), 2 usage or config error.
Reasoning is never printed in text mode; --json has it as ReasoningDelta events.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any, TextIO

from tuiapp.commands import _start
from tuiapp.commands._common import fail, load_config, require_trust
from tuiapp.conversation import mentions, session_admin
from tuiapp.conversation.conversation import Approval, Approver, allow_all, deny_all
from tuiapp.project.session_start import StartPlan
from tuiapp.project.workspace import Workspace
from tuiapp.providers import ModelError, make_provider
from tuiapp.security import policy
from tuiapp.security.display import StreamPrintable, json_printable, printable
from tuiapp.vocab.events import (
    UNFINISHED_STOPS,
    Compacted,
    Event,
    MessageAdded,
    Notice,
    PromptOutput,
    ProviderError,
    Retrying,
    TextDelta,
    ToolCallDecided,
    ToolCallQueued,
    ToolCallRequested,
    ToolCallStarted,
    ToolFinished,
)
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

STATUS_MARK = {"ok": "✔", "failed": "✗", "timed_out": "⏱", "cancelled": "⊘", "denied": "⊘"}


class Printer:
    """Events → stdout/stderr, as text or one JSON object per line."""

    def __init__(self, as_json: bool, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> None:
        self.as_json, self.out, self.err = as_json, out, err
        self.failed = False
        self.interactive = True  # set by main: questions are asked on the terminal
        self._at_line_start = True
        self._reply_text = StreamPrintable()  # the display edge (core.display)
        self._queued: set[str] = set()  # calls waiting for a slot ([tools] max_parallel)
        # The question on the terminal now (tty_approver): a line printed meanwhile (another
        # call finishing) goes below it, and the question is asked again under it.
        self.asking: str | None = None

    def __call__(self, event: Event) -> None:
        if isinstance(event, ToolFinished) and event.status in ("failed", "timed_out"):
            self.failed = True
        if isinstance(event, ProviderError):
            self.failed = True
        if isinstance(event, ToolCallDecided) and event.decision == "ask" and (
                event.approved is False and not self.interactive):
            self.failed = True  # a call that needed asking, with no one to ask: not a success
        if self.as_json:
            self.out.write(json_printable(json.dumps(event.to_json(), ensure_ascii=False)) + "\n")
            self.out.flush()
            return
        if isinstance(event, TextDelta):
            text = self._reply_text(event.text)
            if text:
                self.out.write(text)
                self.out.flush()
                self._at_line_start = text.endswith("\n")
        elif isinstance(event, MessageAdded) and event.message.role == "assistant":
            if not self._at_line_start:
                self.out.write("\n")
                self.out.flush()
                self._at_line_start = True
        elif isinstance(event, ToolCallRequested):
            args = json.dumps(event.call.arguments, ensure_ascii=False)
            self._note(f"→ {event.call.name} {args}")
        elif isinstance(event, ToolCallQueued):  # as the TUI shows it: "queued"
            self._queued.add(event.call_id)
            ahead = f", {event.ahead} ahead" if event.ahead else ""
            self._note(f"  {event.name} queued (waiting for a free slot{ahead})")
        elif isinstance(event, ToolCallStarted) and event.call_id in self._queued:
            self._queued.discard(event.call_id)
            self._note(f"  {event.name} started")
        elif isinstance(event, ToolCallDecided) and event.decision == "deny":
            said = f"{event.message} " if event.message else ""
            self._note(f"  denied: {said}({event.rule})" if said else f"  denied: {event.rule}")
        elif (isinstance(event, ToolCallDecided) and event.decision == "ask"
              and event.approved is False):
            self._note(f"  not run: {event.reason}" if event.reason else "  denied by you")
        elif isinstance(event, ToolFinished):
            code = "" if event.exit_code is None else f"exit {event.exit_code}, "
            self._note(f"{STATUS_MARK.get(event.status, '?')} {event.name} {event.status} "
                       f"({code}{event.duration_ms} ms)")
        elif isinstance(event, Retrying):
            self._note(f"retrying in {event.delay:g} s (attempt {event.attempt}): {event.reason}")
        elif isinstance(event, ProviderError):
            self._note(f"kep: provider error: {event.message}"
                       + (" (partial reply kept; retry with --continue)" if event.partial else ""))
        elif isinstance(event, Compacted):
            how = "automatically: the context was full" if event.automatic else "as asked"
            self._note(f"kep: compacted {event.replaced} earlier messages into a summary "
                       f"({how}); they stay in the session")
        elif isinstance(event, Notice):
            self._note(f"kep: {event.text}")
        elif isinstance(event, PromptOutput):  # a .prompt file's `.print`: its output
            self.out.write(("" if self._at_line_start else "\n") + printable(event.text) + "\n")
            self.out.flush()
            self._at_line_start = True

    def _note(self, line: str) -> None:
        if self.asking is not None:
            self.err.write("\n" + printable(line) + "\n" + self.asking)
        else:
            self.err.write(printable(line) + "\n")
        self.err.flush()


async def _show_system(ws: Workspace, plan: StartPlan | None) -> None:
    """--show-system: exactly what the model would get (with --prompt/--agent, theirs too)."""
    await ws.registry.refresh()
    if plan is not None:
        try:
            await _start.ready(plan, ws.runner("show-system"))
        except _start.StartFailed as e:
            fail(str(e).removesuffix("\nnothing was sent"), e.code)
        for note in plan.prompt.notices if plan.prompt else plan.notices:
            print(f"kep: {note}", file=sys.stderr)
    from tuiapp.project import instructions as project_instructions

    if note := project_instructions.load(ws.config).note:
        print(f"kep: {printable(note)}", file=sys.stderr)
    print(printable(ws.system_prompt()))


# Headless runs give MCP servers this long to list their tools before the first request. A
# server the prompt names (its name or one of its tools) gets up to its startup_timeout; the
# tools of any other slower server are not offered to this run, and a notice says so.
MCP_WAIT = 5.0


async def _settle_mcp(ws: Workspace, text: str = "", emit: Any = None) -> None:
    if ws.mcp is None:
        return
    still = await ws.mcp.wait_for_prompt(text, MCP_WAIT)
    if emit is None:
        return
    for name, state in sorted(ws.mcp.states().items()):
        if state.status in ("failed", "exited"):  # never left out without a word
            emit(Notice(f"MCP server {name} {state.describe()}: its tools are not offered to "
                        "this run", "warning"))
    if still:
        emit(Notice(f"MCP server{'s' if len(still) > 1 else ''} {', '.join(still)} still "
                    f"starting after {MCP_WAIT:g}s: {'their' if len(still) > 1 else 'its'} "
                    "tools are not offered to this run (name a server or one of its tools in "
                    "the prompt to wait for it, up to its startup_timeout)", "warning"))


def network_asker(yes: bool, interactive: bool) -> None:
    """Who answers when a sandboxed call reaches a host no rule allows: --yes allows, a
    terminal is asked (y: this host for the session), else it is refused."""
    from tuiapp.security.sandbox import spawn

    said: dict[tuple[str, str], bool] = {}

    async def ask(tool: str, host: str, port: int) -> bool:
        if yes:
            return True
        if not interactive:
            return False
        if (tool, host) not in said:
            prompt = printable(f"Allow {tool} to reach {host}:{port} (this session)? [y/N] ")
            said[(tool, host)] = await asyncio.to_thread(_read_answer, prompt) in ("y", "yes")
        return said[(tool, host)]

    spawn.set_network_asker(ask)


def tty_approver(printer: Printer | None = None) -> Approver:
    """Ask on the terminal. Only used when stdin and stderr are a TTY. `printer` knows a
    question is open, so what it prints meanwhile never lands on the question's line."""

    async def ask(call: ToolCall, spec: ToolSpec, verdict: policy.Verdict) -> Approval:
        args = json.dumps(call.arguments, ensure_ascii=False)
        why = f"asking again: {verdict.again}; {verdict.rule}" if verdict.again else verdict.rule
        prompt = printable(f"Allow {call.name} {args}? ({why}) [y/N] ")
        if printer is not None:
            printer.asking = prompt
        try:
            answer = await asyncio.to_thread(_read_answer, prompt)
        finally:
            if printer is not None:
                printer.asking = None
        return Approval(answer in ("y", "yes"))

    return ask


def _read_answer(prompt: str) -> str:
    sys.stderr.write(prompt)
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower()


def main(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    require_trust(cfg)  # an untrusted project's tools would be missing without a word
    ws = Workspace(cfg)
    if getattr(args, "mode", None):
        ws.set_mode(args.mode)  # kept over config reloads
    plan = _start.plan_from_args(ws, args)  # --prompt / --agent: the session starts from it
    if args.show_system:
        asyncio.run(_show_system(ws, plan))
        return 0
    text = args.text
    interactive = sys.stdin.isatty() and sys.stderr.isatty()
    if text is None and not (plan and plan.kind == "prompt"):  # a .prompt file is the prompt
        if sys.stdin.isatty():
            fail("no prompt: give one as an argument or on stdin (see kep run --help)")
        text = sys.stdin.read()
        interactive = False  # stdin was the prompt: nobody can answer on it
    if text is not None and not text.strip():
        fail("the prompt is empty")

    from tuiapp.commands._common import take_session
    from tuiapp.conversation.recorder import SessionRecorder
    from tuiapp.conversation.store import Store, UnknownSession
    from tuiapp.conversation.store_schema import StoreError

    try:
        store = Store.open()
    except StoreError as e:
        fail(str(e), 1)
    history = []
    session_id = None
    model = args.model
    if getattr(args, "fork", False) and not (args.continue_ or args.session):
        fail("--fork goes with --continue or --session")
    if args.continue_ or args.session:
        try:
            session_id = (session_admin.continue_target(store, ws.root) if args.continue_
                          else store.resolve_id(args.session))  # unique prefixes are fine
        except UnknownSession as e:
            fail(str(e))
        if session_id is None:
            fail("no earlier session in this project to continue")
        session_id = take_session(store, session_id, fork=bool(getattr(args, "fork", False)))
        history = store.load_messages(session_id)
        model = model or store.session_info(session_id).model
    model = model or cfg.default_model()
    try:
        provider = make_provider(cfg, model)
    except ModelError as e:
        fail(str(e))
    created = session_id is None
    if session_id is None:
        session_id = store.create_session(ws.root, model)
    elif model != store.session_info(session_id).model:
        store.update_model(session_id, model)  # resumed with another --model

    session_admin.remember_open(ws.root, session_id)  # `--continue` goes on from here
    printer = Printer(args.json)
    printer.interactive = interactive or bool(args.yes)
    recorder = SessionRecorder(store, session_id)

    def emit(event: Event) -> None:
        recorder(event)
        printer(event)

    approver = allow_all if args.yes else (tty_approver(printer) if interactive else deny_all)
    network_asker(args.yes, interactive)

    async def go() -> str:
        ws.start_mcp(emit=emit)
        runner = ws.runner(session_id)
        await asyncio.gather(ws.registry.refresh(), _settle_mcp(ws, text or "", emit))
        conv = ws.conversation(provider, runner, approver, emit, history)
        if ws.mcp is not None:  # sampling asks like a tool call; elicitation is declined
            from tuiapp.project.mcp_host import for_conversation

            ws.mcp.host = for_conversation(conv, approver, emit)
        try:
            await ws.session_started(emit)
            stop = "end_turn"
            if plan is not None:
                await _start.ready(plan, runner)
                stop = await _start.start(plan, conv)
            if text is not None and stop != "error":
                got = await mentions.attach_for(text, ws.root, ws.mcp, model=provider.label,
                                                takes_images=provider.config.api != "offline")
                for note in got.notes:  # what an `@` could not attach: one line each
                    emit(Notice(note, "warning"))
                stop = await conv.turn(text, attachments=got.attachments)
            return stop
        finally:
            await provider.aclose()
            await ws.aclose()

    try:
        stop = asyncio.run(go())
    except _start.StartFailed as e:
        if created and not store.load_messages(session_id, for_resume=False):
            # Nothing reached the model (a check, or a `.cmd` before the first message, failed;
            # the reason is on stderr): leave no "(no message)" record for --continue to land in.
            session_admin.delete(store, [session_id])
        fail(str(e), e.code)
    finally:
        store.close()
    if recorder.error is not None:  # shown is not saved: never claim it was
        print(f"kep: the reply was shown but not saved: {printable(recorder.error)}",
              file=sys.stderr)
        return 1
    return 1 if stop == "error" or stop in UNFINISHED_STOPS or printer.failed else 0
