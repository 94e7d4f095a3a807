"""`/undo` and "restore the files to here" (issue 28 item 5): the checkpoints of a session put
back, newest first, by kep's own bundled `files` (restore_file), through the runner and its
sandbox like every tool call: the same confinement and write path as the write undone."""

from __future__ import annotations

from dataclasses import dataclass, field

from tuiapp.conversation import checkpoints
from tuiapp.conversation.store import Store
from tuiapp.settings import paths
from tuiapp.tools.runner import Runner
from tuiapp.vocab.events import Event
from tuiapp.vocab.tool_specs import ToolSpec


@dataclass
class Undone:
    restored: list[str] = field(default_factory=list)  # "restored a.txt", "removed b.txt"
    failed: list[str] = field(default_factory=list)  # "a.txt: why"

    def summary(self) -> str:
        if not self.restored and not self.failed:
            return "nothing to undo: no file kep's built-ins wrote is left to restore"
        parts = [*self.restored, *(f"not restored: {f}" for f in self.failed)]
        return "; ".join(parts) + f" ({checkpoints.NOT_RESTORED})"


def writer() -> ToolSpec:
    exe = str(paths.builtin_functions_dir() / "files")
    return ToolSpec("writefile", "", {"type": "object"}, "keprompt", exe, run={"exe": exe})


async def undo(store: Store, session_id: str, runner: Runner, *, after: int | None = None,
               last_call: bool = False) -> Undone:
    """Restore the last call's files (`last_call`), or every file written once the session
    had more than `after` messages. A checkpoint restored is not restored twice."""
    with store._tx() as db:
        todo = checkpoints.pending(db, session_id, after=after, last_call=last_call)
    out = Undone()
    done: list[int] = []
    for cp in todo:  # newest first: a file written twice ends as it was before the first
        spec, call = checkpoints.restore_call(cp, writer())

        def ignore(event: Event) -> None:
            pass

        outcome = await runner.run(spec, call, ignore)
        fin = outcome.finished
        if fin.status == "ok":
            out.restored.append(fin.result.strip().splitlines()[-1] if fin.result.strip()
                                else f"restored {cp.path}")
            done.append(cp.id)
        else:
            out.failed.append(f"{cp.path}: {(outcome.stderr or fin.result).strip()[:300]}")
    with store._tx() as db:
        checkpoints.mark_restored(db, done)
    return out
