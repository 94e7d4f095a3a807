"""Running a `.prompt` file against a Conversation: statements → history, tool calls, requests.

One interpreter serves two passes. The dry pass (`check`) walks every statement before
anything happens: variables defined before use, `.functions`/`.cmd` names known, files found,
something to send at each `.exec`. Only when it passes does `run` do it for real, emitting the
same events as a typed turn (MessageAdded, ToolCall*, TextDelta …) so the transcript, the
side panes, the session store and `kep run --json` all see the prompt like any other turn.

What each statement does is in prompt_statements (PromptStatements, a mixin); here: the
state, the program (with keprompt's implicit final `.exec`), substitution, and the draft.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuiapp.conversation.conversation import Conversation
from tuiapp.conversation.prompt_calls import parse_cmd
from tuiapp.conversation.prompt_model import PromptError, PromptFile, Statement
from tuiapp.conversation.prompt_statements import (
    RUNTIME,
    Draft,
    PromptStatements,
    RuntimeValue,
    Tools,
    entry_matches,
)
from tuiapp.conversation.prompt_variables import (
    DEFAULT_POSTFIX,
    DEFAULT_PREFIX,
    UndefinedVariable,
    lookup,
    render_value,
    variable_pattern,
)
from tuiapp.vocab.events import MessageAdded, Notice
from tuiapp.vocab.messages import Message

MESSAGE_STATEMENTS = {".user", ".text", ".assistant", ".include", ".image", ".tool_call",
                      ".tool_result"}


@dataclass
class PromptRun(PromptStatements):
    prompt: PromptFile
    root: Path
    tools: Tools
    values: Mapping[str, Any] = field(default_factory=dict)  # --set / form: override params
    notices: list[str] = field(default_factory=list)
    system_parts: list[str] = field(default_factory=list)
    allowed: list[str] | None = None  # `.functions` entries; None: no .functions → no tools
    vars: dict[str, Any] = field(init=False)
    _draft: Draft | None = field(init=False, default=None)
    _dry: bool = field(init=False, default=True)
    _queued: int = field(init=False, default=0)  # dry pass: messages that would be sent

    def __post_init__(self) -> None:
        self.notices = list(self.prompt.warnings)
        model = self.values.get("model", self.prompt.params.get("model"))
        if model:
            self.notices.append(f"{self.prompt.display_path}: kep talks to the session's model "
                                f"(--model or the palette); the prompt's model {model!r} is "
                                "not used")
        self._reset()

    # ---- public API ------------------------------------------------------------------------

    def system_text(self) -> str:
        return "\n\n".join(p for p in self.system_parts if p.strip())

    def allow_only(self, name: str) -> bool:
        """The `.functions` allow-list, read live (hot reload): no `.functions` → no tools."""
        if not self.allowed:
            return False
        spec = self.tools().get(name)
        return spec is not None and any(entry_matches(e, spec) for e in self.allowed)

    def check(self) -> None:
        """The dry pass. Raises PromptError naming file, line and statement; nothing runs."""
        self._dry = True
        self._reset()
        for st in self._program():
            if self._step_dry(st) == "exit":
                break
        self._commit_dry()

    async def run(self, conv: Conversation) -> str:
        """Check, then run every statement. Returns the last stop reason ("end_turn",
        "exit", "error", …). Raises PromptError for a statement that cannot run."""
        self.check()
        self._dry = False
        self._reset()
        for text in self.notices:
            conv.emit(Notice(text, "warning"))
        stop = "end_turn"
        for st in self._program():
            outcome = await self._step(st, conv)
            if outcome is not None:
                stop = outcome
            if outcome in ("exit", "error"):
                break
        self._commit(conv)
        return stop

    # ---- the program -----------------------------------------------------------------------

    def _program(self) -> list[Statement]:
        """keprompt's completion rule: a file not ending in `.exit` gets a final `.exec` —
        here only when something was written after the last `.exec` (keprompt also sends
        again after a trailing `.print`, which only asks the model to repeat itself)."""
        sts = list(self.prompt.statements)
        last = next((s for s in reversed(sts) if s.keyword != ".#"), None)
        if last is None or last.keyword == ".exit":
            return sts
        tail = sts[max((i for i, s in enumerate(sts) if s.keyword == ".exec"), default=-1) + 1:]
        if any(self._adds_message(s) for s in tail):
            sts.append(Statement(".exec", "", sts[-1].line + 1, "(implicit .exec at end of file)"))
        return sts

    def _adds_message(self, st: Statement) -> bool:
        if st.keyword == ".cmd":
            return parse_cmd(self.prompt, st).target is None
        return st.keyword in MESSAGE_STATEMENTS

    def _reset(self) -> None:
        self.vars = {"Prefix": DEFAULT_PREFIX, "Postfix": DEFAULT_POSTFIX}
        self.vars.update(self.prompt.params)
        self.vars.update(self.values)
        self.system_parts = []
        self.allowed = None
        self._draft = None
        self._queued = 0

    def _error(self, st: Statement, message: str) -> PromptError:
        return self.prompt.error(st, message)

    def _subst(self, st: Statement, text: str) -> str | RuntimeValue:
        """Substitute once; a runtime-only value makes the whole text runtime in the dry pass."""
        pattern = variable_pattern(str(self.vars.get("Prefix", DEFAULT_PREFIX)),
                                   str(self.vars.get("Postfix", DEFAULT_POSTFIX)))
        unknown = False

        def one(m: Any) -> str:
            nonlocal unknown
            name = m.group(1)
            if name.startswith("VM."):
                return render_value(self._vm_property(st, name[3:]))
            try:
                value = lookup(name, self.vars)
            except UndefinedVariable:
                raise self._undefined(st, name) from None
            if isinstance(value, RuntimeValue):
                unknown = True
                return ""
            return render_value(value)

        out = pattern.sub(one, text)
        return RUNTIME if unknown else out

    def _undefined(self, st: Statement, name: str) -> PromptError:
        root = name.split(".")[0]
        if root == "last_response":
            return self._error(st, "<<last_response>> is used before any .exec or .cmd")
        later = any(s.keyword == ".set" and s.value.partition(" ")[0] == root and s.line > st.line
                    for s in self.prompt.statements)
        if later:
            return self._error(st, f"<<{name}>> is used before the `.set {root}` that defines it")
        return self._error(st, f"variable <<{name}>> is not defined (give it with --set "
                               f"{root}=VALUE, `.set {root} …`, or .prompt params)")

    def _vm_property(self, st: Statement, name: str) -> Any:
        props = {"filename": self.prompt.display_path, "prompt_name": self.prompt.name,
                 "prompt_version": self.prompt.meta.get("version", "")}
        if name not in props:
            raise self._error(st, f"<<VM.{name}>> is not available in kep "
                                  f"(VM.{', VM.'.join(sorted(props))} are)")
        return props[name]

    # ---- drafts ------------------------------------------------------------------------------

    def _append(self, text: str) -> None:
        if self._draft is None:
            self._draft = Draft("user")
        if text:
            self._draft.parts.append(text)
        elif self._dry:
            self._draft.parts.append("")  # dry pass: a part will be there at run time

    def _commit_dry(self) -> None:
        d, self._draft = self._draft, None
        if d is None:
            return
        if d.role == "system":
            self.system_parts.append("\n".join(d.parts))
        elif d.parts or d.images:
            self._queued += 1

    def _commit(self, conv: Conversation) -> None:
        d, self._draft = self._draft, None
        if d is None:
            return
        text = "\n".join(p for p in d.parts if p)
        if d.role == "system":
            self.system_parts.append(text)
        elif text or d.images:
            self._add(conv, Message(d.role, text, images=tuple(d.images)))  # type: ignore[arg-type]

    @staticmethod
    def _add(conv: Conversation, message: Message) -> None:
        conv.history.append(message)
        conv.emit(MessageAdded(message))
