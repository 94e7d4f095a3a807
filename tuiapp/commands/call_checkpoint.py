"""The checkpoint of a `kep call` to one of kep's file writers (issue 28 item 5).

`kep run` keeps the file as it was in the session it records; `kep call` has no conversation,
so each call to a file writer gets a session of its own: the call as a user message, the call
and its result, and the checkpoint. `kep sessions undo ID` (or `kep --resume ID`, then the
undo action) puts the file back. A call to any other tool records nothing, as `kep run`
keeps no checkpoint for it either.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from tuiapp.conversation import checkpoints
from tuiapp.conversation.store import Store
from tuiapp.conversation.store_schema import StoreError
from tuiapp.security.display import printable
from tuiapp.vocab.events import MessageAdded, ToolFinished
from tuiapp.vocab.messages import Message, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

MODEL = "kep call"  # the session's model column: no model took part


@dataclass
class CallSession:
    store: Store
    session_id: str

    def finish(self, call: ToolCall, fin: ToolFinished) -> None:
        try:
            self.store.record(self.session_id, MessageAdded(Message(
                "tool", fin.result, tool_call_id=call.id, name=call.name,
                is_error=fin.status != "ok")))
        finally:
            self.store.close()


def begin(root: Path, spec: ToolSpec, call: ToolCall) -> CallSession | None:
    """For a file-writer call, a new session holding the call and the file's checkpoint (a
    line on stderr names it); None for other tools, or when the store cannot be opened (said:
    the write then has no undo, and the user knows before it runs)."""
    cp = checkpoints.capture(root, spec, call)
    if cp is None:
        return None
    try:
        store = Store.open()
    except StoreError as e:
        print(f"kep: {printable(str(e))}: this write has no checkpoint", file=sys.stderr)
        return None
    sid = store.create_session(root, MODEL)
    typed = f"kep call {call.name} {json.dumps(call.arguments, ensure_ascii=False)}"
    store.record(sid, MessageAdded(Message("user", typed)))
    store.record(sid, MessageAdded(Message("assistant", "", tool_calls=(call,))))
    store.record(sid, cp)
    print(f"kep: {printable(cp.path)} as it was is kept in session {sid} "
          f"(`kep sessions undo {sid}` puts it back)", file=sys.stderr)
    return CallSession(store, sid)
