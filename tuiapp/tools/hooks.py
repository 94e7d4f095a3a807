"""Running `[[hooks]]` (README "Hooks"): each matching hook's command gets a JSON description
of the event on stdin, runs the way tools run (tools/proc.py: its own process group, no
terminal, the project root as cwd, kep's environment minus secrets, the whole group killed on
timeout), and for `before_tool` answers on stdout.

`before_tool` answers `{"decision": "allow" | "deny" | "ask", "message": "…"}` (empty output:
no opinion). A hook that can't start, exits non-zero, times out or prints anything else is a
deny for `before_tool` and a notice for the other events. What a hook's answer does to the
policy's verdict is decided in core/approval_flow.py, not here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuiapp.settings.config_types import HookConfig

MAX_STDOUT = 64 * 1024  # a hook's answer is a line of JSON; more is kept out
DECISIONS = ("allow", "deny", "ask")
MESSAGE_CAP = 500


@dataclass(frozen=True)
class HookAnswer:
    decision: str  # "allow" | "deny" | "ask"
    message: str
    hook: str  # the hook's origin, "kep.toml hook 1"


class Hooks:
    """The hooks of one config, run on demand. `env` builds a child's environment (secrets
    removed); `notice` reports a failing hook of an event that can't be denied."""

    def __init__(self, hooks: Callable[[], tuple[HookConfig, ...]], root: Path,
                 env: Callable[[], Mapping[str, str]],
                 notice: Callable[[str], None] | None = None) -> None:
        self.hooks, self.root, self.env, self.notice = hooks, root, env, notice

    def matching(self, event: str, tool: str | None = None) -> list[HookConfig]:
        """The hooks of `event` now (a config reload applies from the next event)."""
        return [h for h in self.hooks() if h.event == event and (
            h.matcher is None or tool is None or re.fullmatch(h.matcher, tool) is not None)]

    async def before_tool(self, payload: dict[str, Any]) -> HookAnswer | None:
        """The first deny among the matching hooks, else the first ask, else the first allow;
        None when no hook matched or none had an opinion."""
        answers = []
        for hook in self.matching("before_tool", payload.get("tool")):
            answer = await self._ask(hook, payload)
            if answer is not None:
                if answer.decision == "deny":
                    return answer  # one deny is enough; the rest need not run
                answers.append(answer)
        for decision in ("ask", "allow"):
            for answer in answers:
                if answer.decision == decision:
                    return answer
        return None

    async def fire(self, event: str, payload: dict[str, Any]) -> None:
        """Run the hooks of an event that has no answer; a failure is a notice."""
        for hook in self.matching(event, payload.get("tool")):
            problem = (await self._run(hook, {"event": event, **payload}))[1]
            if problem and self.notice is not None:
                self.notice(f"hook {hook.origin} ({event}) {problem}")

    async def _ask(self, hook: HookConfig, payload: dict[str, Any]) -> HookAnswer | None:
        out, problem = await self._run(hook, {"event": "before_tool", **payload})
        if problem:
            return HookAnswer("deny", f"hook {hook.origin} {problem}", hook.origin)
        if not out.strip():
            return None
        try:
            answer = json.loads(out)
        except ValueError:
            answer = None
        if not isinstance(answer, dict) or answer.get("decision") not in DECISIONS:
            return HookAnswer("deny", f"hook {hook.origin} answered something other than "
                              '{"decision": "allow" | "deny" | "ask"}', hook.origin)
        message = answer.get("message")
        text = message[:MESSAGE_CAP] if isinstance(message, str) else ""
        return HookAnswer(answer["decision"], text, hook.origin)

    async def _run(self, hook: HookConfig, payload: dict[str, Any]) -> tuple[str, str]:
        """(stdout, "" or what went wrong)."""
        from tuiapp.tools.proc import run_collect

        data = json.dumps({**payload, "project": str(self.root)}, ensure_ascii=False,
                          default=str).encode("utf-8", "surrogatepass")
        try:
            result = await run_collect(list(hook.argv), timeout=hook.timeout, cwd=self.root,
                                       env=self.env(), stdin=data, max_stdout=MAX_STDOUT)
        except OSError as e:
            return "", f"could not start: {e.strerror or e}"
        if result.timed_out:
            return "", f"timed out after {hook.timeout:g} s"
        if result.exit_code != 0:
            tail = result.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            why = f": {tail[0][:MESSAGE_CAP]}" if tail[0] else ""
            return "", f"failed (exit {result.exit_code}){why}"
        if result.stdout_truncated:
            return "", "printed more than an answer"
        return result.stdout.decode("utf-8", "replace"), ""
