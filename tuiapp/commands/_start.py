"""`--prompt NAME` / `--agent NAME` / `--set K=V` for the headless commands: the StartPlan,
or `kep: why` and exit 2 (unknown name, syntax error with file and line, missing values)."""

from __future__ import annotations

import argparse

from tuiapp.commands._common import fail
from tuiapp.conversation.conversation import Conversation
from tuiapp.conversation.prompt_model import PromptError
from tuiapp.project.session_start import StartError, StartPlan, parse_sets, prepare
from tuiapp.project.workspace import Workspace
from tuiapp.tools.runner import Runner


class StartFailed(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def plan_from_args(ws: Workspace, args: argparse.Namespace, *,
                   activate: bool = True) -> StartPlan | None:
    """Read the prompt or agent the flags name and (`activate`) make it the workspace's
    active start. The TUI activates it itself, once its variables are all given."""
    prompt, agent = getattr(args, "prompt", None), getattr(args, "agent", None)
    sets = getattr(args, "set_vars", None) or []
    if not (prompt or agent):
        if sets:
            fail("--set is for the variables of --prompt NAME or --agent NAME")
        return None
    try:
        plan = prepare(ws, prompt=prompt, agent=agent, sets=parse_sets(sets))
    except (StartError, PromptError) as e:
        fail(str(e))
    if activate:
        ws.start = plan
    return plan


async def ready(plan: StartPlan, runner: Runner) -> None:
    """After the registry refresh: every check that must pass before anything is sent."""
    try:
        await plan.ready(runner)
    except (StartError, PromptError) as e:
        raise StartFailed(f"{e}\nnothing was sent", 2) from None


async def start(plan: StartPlan, conv: Conversation) -> str:
    try:
        return await plan.start(conv)
    except PromptError as e:
        raise StartFailed(str(e), 1) from None
