"""What each statement of a `.prompt` file does, in the dry pass (`_step_dry`: check only) and
for real (`_step`): messages, `.set`, `.functions`, `.include`, `.image`, `.cmd`, `.exec`.

A mixin of PromptRun (prompt_run.py), which holds the state, substitutes variables and keeps
the message being written (the draft). A `.cmd` call goes through the same approval policy
and runner as a model's call (run_author_call).
"""

from __future__ import annotations

import glob
import json
import mimetypes
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuiapp.conversation.prompt_calls import (
    coerce,
    parse_cmd,
    parse_tool_call,
    parse_tool_result_header,
)
from tuiapp.conversation.prompt_file import function_entries
from tuiapp.conversation.prompt_model import PromptError, PromptFile, Statement
from tuiapp.security.approval_flow import Cleared, clear
from tuiapp.tools.schema import arguments_error
from tuiapp.vocab.events import PromptOutput, ToolCallRequested, ToolFinished, TurnStarted
from tuiapp.vocab.messages import Message, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

if TYPE_CHECKING:
    from tuiapp.conversation.conversation import Conversation

INCLUDE_CAP = 1024 * 1024  # bytes per included file: a prompt is not a way to upload a disk
Tools = Callable[[], Mapping[str, ToolSpec]]


class RuntimeValue:
    """A value only known while running (a reply, a `.cmd` result): the dry pass skips checks
    that depend on it."""

    def __repr__(self) -> str:
        return "<runtime value>"


RUNTIME = RuntimeValue()


def module_of(spec: ToolSpec) -> str:
    """keprompt's module of a function: the stem of the executable that declares it."""
    if spec.source.startswith("mcp:"):
        return spec.source[4:]
    return Path(spec.source).stem


def entry_matches(entry: str, spec: ToolSpec) -> bool:
    if "." in entry:
        module, fn = entry.rsplit(".", 1)
        return module_of(spec) == module and fn in ("*", spec.name)
    return spec.name == entry


@dataclass
class Draft:
    role: str  # system | user | assistant
    parts: list[str] = field(default_factory=list)
    images: list[str] = field(default_factory=list)


class PromptStatements:
    """Mixed into PromptRun, which provides the state and the helpers declared here."""

    prompt: PromptFile
    root: Path
    tools: Tools
    notices: list[str]
    allowed: list[str] | None
    vars: dict[str, Any]
    _draft: Draft | None
    _dry: bool
    _queued: int

    if TYPE_CHECKING:
        def _error(self, st: Statement, message: str) -> PromptError: ...
        def _subst(self, st: Statement, text: str) -> str | RuntimeValue: ...
        def _append(self, text: str) -> None: ...
        def _commit_dry(self) -> None: ...
        def _commit(self, conv: Conversation) -> None: ...
        @staticmethod
        def _add(conv: Conversation, message: Message) -> None: ...

    def _step_dry(self, st: Statement) -> str | None:
        kw = st.keyword
        if kw in (".#", ".debug", ".prompt"):
            return None
        if kw in (".system", ".user", ".assistant"):
            self._commit_dry()
            text = self._subst(st, st.value)
            self._draft = Draft(kw[1:], [st.value if isinstance(text, RuntimeValue) else text])
        elif kw == ".text":
            text = self._subst(st, st.value)
            self._append(st.value if isinstance(text, RuntimeValue) else text)
        elif kw == ".set":
            self._do_set(st)
        elif kw == ".functions":
            self._do_functions(st)
        elif kw == ".include":
            path = self._subst(st, st.value.strip())
            if not isinstance(path, RuntimeValue):
                self._include_files(st, path)
            self._append("")
        elif kw == ".image":
            path = self._subst(st, st.value.strip())
            if not isinstance(path, RuntimeValue):
                self._image_path(st, path)
            self._commit_dry()
            self._draft = Draft("user", images=[str(path)])
        elif kw == ".cmd":
            call = parse_cmd(self.prompt, st)
            self._cmd_spec_and_args(st, call.name, call.arguments, call.raw)
            self.vars["last_response"] = RUNTIME
            if call.target:
                self.vars[call.target] = RUNTIME
            else:
                self._append("")
        elif kw == ".tool_call":
            parse_tool_call(self.prompt, st)
            self._commit_dry()
            self._queued += 1
        elif kw == ".tool_result":
            parse_tool_result_header(self.prompt, st)
            self._subst(st, st.value.partition("\n")[2])
            self._commit_dry()
            self._queued += 1
        elif kw == ".exec":
            self._commit_dry()
            if self._queued == 0:
                raise self._error(st, "nothing to send: .exec comes before any .user, .text, "
                                      ".assistant, .include or .image")
            self.vars["last_response"] = RUNTIME
        elif kw == ".print":
            self._subst(st, st.value)
        elif kw == ".exit":
            return "exit"
        return None

    async def _step(self, st: Statement, conv: Conversation) -> str | None:
        kw = st.keyword
        if kw in (".#", ".debug", ".prompt"):
            return None
        if kw in (".system", ".user", ".assistant"):
            self._commit(conv)
            self._draft = Draft(kw[1:], [self._text(st, st.value)])
        elif kw == ".text":
            self._append(self._text(st, st.value))
        elif kw == ".set":
            self._do_set(st)
        elif kw == ".functions":
            self._do_functions(st)
        elif kw == ".include":
            for path in self._include_files(st, self._text(st, st.value.strip())):
                self._append(_read_text(path))
        elif kw == ".image":
            image = self._image_path(st, self._text(st, st.value.strip()))
            self._commit(conv)
            self._draft = Draft("user", images=[str(image)])
        elif kw == ".cmd":
            return await self._do_cmd(st, conv)
        elif kw == ".tool_call":
            call, call_id = parse_tool_call(self.prompt, st)
            args = {k: self._text(st, v) if isinstance(v, str) else v
                    for k, v in call.arguments.items()}
            self._commit(conv)
            self._add(conv, Message("assistant", "", tool_calls=(
                ToolCall(call_id, call.name, args, json.dumps(args, ensure_ascii=False)),)))
        elif kw == ".tool_result":
            call_id, name = parse_tool_result_header(self.prompt, st)
            self._commit(conv)
            self._add(conv, Message("tool", self._text(st, st.value.partition("\n")[2]),
                                    tool_call_id=call_id, name=name))
        elif kw == ".exec":
            return await self._do_exec(conv)
        elif kw == ".print":
            conv.emit(PromptOutput(self._text(st, st.value)))
        elif kw == ".exit":
            return "exit"
        return None

    def _text(self, st: Statement, template: str) -> str:
        out = self._subst(st, template)
        assert isinstance(out, str)  # nothing is a runtime placeholder once running
        return out

    def _do_set(self, st: Statement) -> None:
        name, _, value = st.value.partition(" ")
        out = self._subst(st, value.strip())
        self.vars[name] = out

    def _do_functions(self, st: Statement) -> None:
        entries = function_entries(self.prompt, st)
        tools = self.tools()
        for e in entries:
            if not any(entry_matches(e, spec) for spec in tools.values()):
                modules = sorted({module_of(s) for s in tools.values()})
                raise self._error(st, f"`.functions`: no tool matches {e!r} (tools: "
                                      f"{', '.join(sorted(tools)) or 'none'}; modules: "
                                      f"{', '.join(modules) or 'none'})")
        self.allowed = entries  # keprompt: a later .functions replaces the earlier one

    def _include_files(self, st: Statement, pattern: str) -> list[Path]:
        path = Path(pattern).expanduser()
        if any(c in pattern for c in "*?["):
            base = str(path if path.is_absolute() else self.root / path)
            files = [Path(p) for p in sorted(glob.glob(base, recursive=True)) if Path(p).is_file()]
            if not files and self._dry:
                self.notices.append(f"{self.prompt.display_path}:{st.line}: .include {pattern}: "
                                    "no file matches")
            return files
        full = path if path.is_absolute() else self.root / path
        if not full.is_file():
            raise self._error(st, f"`.include`: no file {pattern} (paths are relative to the "
                                  f"project root, {self.root})")
        return [full]

    def _image_path(self, st: Statement, value: str) -> Path:
        path = Path(value).expanduser()
        full = path if path.is_absolute() else self.root / path
        if not full.is_file():
            raise self._error(st, f"`.image`: no file {value} (relative to {self.root})")
        kind, _ = mimetypes.guess_type(full.name)
        if not (kind or "").startswith("image/"):
            raise self._error(st, f"`.image`: {value} is not an image file "
                                  f"({kind or 'unknown type'})")
        return full.resolve()

    def _cmd_spec_and_args(self, st: Statement, name: str, arguments: Mapping[str, Any],
                           raw: Mapping[str, str]) -> tuple[ToolSpec, dict[str, Any]]:
        tools = self.tools()
        spec = tools.get(name)
        if spec is None:
            raise self._error(st, f"`.cmd`: no tool {name!r} (tools: "
                                  f"{', '.join(sorted(tools)) or 'none'})")
        props = (spec.parameters or {}).get("properties") or {}
        args: dict[str, Any] = {}
        runtime = False
        for key, value in arguments.items():
            if isinstance(value, str):
                value = self._subst(st, value)
                if isinstance(value, RuntimeValue):
                    runtime = True
                    continue
            args[key] = coerce(value, raw.get(key), props.get(key) or {})
        if not runtime:
            problem = arguments_error(spec.parameters, args)
            if problem:
                raise self._error(st, f"`.cmd {name}`: invalid arguments: {problem}")
        return spec, args

    async def _do_cmd(self, st: Statement, conv: Conversation) -> str | None:
        cmd = parse_cmd(self.prompt, st)
        spec, args = self._cmd_spec_and_args(st, cmd.name, cmd.arguments, cmd.raw)
        call = ToolCall(f"cmd_{uuid.uuid4().hex[:10]}", cmd.name, args,
                        json.dumps(args, ensure_ascii=False))
        fin = await run_author_call(conv, spec, call, self.tools().get)
        if fin.status != "ok":
            raise self._error(st, f"`.cmd {cmd.name}` {fin.status}: {fin.result.strip()[:500]}")
        result = fin.result.rstrip("\n")
        self.vars["last_response"] = result
        if cmd.target:
            self.vars[cmd.target] = result
        else:
            self._append(result)
        return None

    async def _do_exec(self, conv: Conversation) -> str:
        self._commit(conv)
        start = len(conv.history)
        last_user = next((m.content for m in reversed(conv.history) if m.role == "user"), "")
        conv.emit(TurnStarted(last_user))
        stop = await conv.run_loop()
        replies = [m.content for m in conv.history[start:] if m.role == "assistant" and m.content]
        self.vars["last_response"] = "\n".join(replies)
        return stop


def _read_text(path: Path) -> str:
    data = path.read_bytes()[:INCLUDE_CAP + 1]
    text = data[:INCLUDE_CAP].decode("utf-8", errors="replace").rstrip("\n")
    if len(data) > INCLUDE_CAP:
        text += f"\n… [{path.name} cut at {INCLUDE_CAP // 1024} KiB]"
    return text


async def run_author_call(conv: Conversation, spec: ToolSpec, call: ToolCall,
                          current: Callable[[str], ToolSpec | None]) -> ToolFinished:
    """A call written by the prompt's author (`.cmd`): the same events, approval policy and
    runner as a model's call, so it shows in the transcript and a side pane like any other.
    `current` finds the tool where the `.cmd` found it (every tool, not only those the
    `.functions` list offers the model), to re-check it after an approval."""
    conv.emit(ToolCallRequested(call, spec.source, spec.format))
    outcome = await clear(call, spec, approval=conv.approval, env=conv.env,
                          approver=conv.approver, emit=conv.emit,
                          current=current)
    if not isinstance(outcome, Cleared):
        fin = ToolFinished(call.id, call.name, outcome.status, None, 0,  # type: ignore[arg-type]
                           outcome.result)
        conv.emit(fin)
        return fin
    return await conv.executor(outcome.spec, outcome.call, conv.emit)


