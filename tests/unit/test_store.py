"""The session store: recording a real turn, reloading, listing, export, and a writer killed
with SIGKILL at random moments."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tuiapp import cli
from tuiapp.conversation.conversation import Conversation, deny_all
from tuiapp.conversation.recorder import SessionRecorder, chain
from tuiapp.conversation.session_history import INTERRUPTED_CALL
from tuiapp.conversation.store import Store, UnknownSession
from tuiapp.conversation.store_schema import StoreError
from tuiapp.providers.base import Provider, StreamEnd, StreamItem
from tuiapp.settings.config_types import ApprovalConfig, ProviderConfig, Rule
from tuiapp.vocab.events import (
    Event,
    MessageAdded,
    TextDelta,
    ToolCallRequested,
    ToolCallStarted,
    ToolFinished,
    Usage,
)
from tuiapp.vocab.messages import Message, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

ECHO = ToolSpec("echo", "echo text", {"type": "object", "properties": {"text": {"type": "string"}},
                                      "required": ["text"]}, "keprompt", "/x/echo")
ALLOW_ECHO = ApprovalConfig(rules=(Rule("echo", "allow"),))


class Scripted(Provider):
    """Each request streams the next script."""

    def __init__(self, *scripts: list[Any]) -> None:
        super().__init__(ProviderConfig("fake", "chat"), "m")
        self.scripts = list(scripts)

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec],
                     system: str | None) -> AsyncIterator[StreamItem]:
        for item in self.scripts.pop(0):
            yield item


async def echo_executor(spec: ToolSpec, call: ToolCall, emit: Any) -> ToolFinished:
    emit(ToolCallStarted(call.id, call.name, "/spool/x.log"))
    fin = ToolFinished(call.id, call.name, "ok", 0, 7, f"echo: {call.arguments['text']}")
    emit(fin)
    return fin


async def run_turn(store: Store, sid: str, provider: Provider, text: str,
                   approval: ApprovalConfig = ALLOW_ECHO,
                   history: list[Message] | None = None) -> Conversation:
    seen: list[Event] = []
    c = Conversation(provider=provider, tools=lambda: {"echo": ECHO}, approval=lambda: approval,
                     approver=deny_all, executor=echo_executor,
                     emit=chain(SessionRecorder(store, sid), seen.append),
                     history=list(history or []))
    await c.turn(text)
    return c


def tool_turn() -> Scripted:
    return Scripted(
        [TextDelta("Let me "), TextDelta("echo."),
         ToolCall.from_raw("c1", "echo", '{"text": "hi"}'), Usage(10, 3), StreamEnd("tool_use")],
        [TextDelta("It said hi."), Usage(20, 4), StreamEnd("end_turn")],
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


async def test_a_turn_is_recorded_and_reloads_as_the_same_history(db: Path, project: Path) -> None:
    store = Store.open(db)
    sid = store.create_session(project, "fake/m")
    conv = await run_turn(store, sid, tool_turn(), "  please\n echo   hi  ")
    store.close()

    with Store.open(db) as again:
        assert again.load_messages(sid) == conv.history
        assert [m.role for m in conv.history] == ["user", "assistant", "tool", "assistant"]
        info = again.session_info(sid)
        assert (info.title, info.model, info.message_count) == ("please echo hi", "fake/m", 4)
        assert info.project_root == str(project.resolve())
        assert (info.input_tokens, info.output_tokens) == (30, 7)
        [rec] = again.tool_calls(sid)
        assert (rec.call_id, rec.name, rec.arguments) == ("c1", "echo", {"text": "hi"})
        assert (rec.status, rec.exit_code, rec.duration_ms, rec.result) == ("ok", 0, 7, "echo: hi")
        assert (rec.decision, rec.spool_path, rec.message_seq) == ("allow", "/spool/x.log", 2)


async def test_denied_call_is_recorded_with_its_rule(db: Path, project: Path) -> None:
    store = Store.open(db)
    sid = store.create_session(project, "fake/m")
    deny = ApprovalConfig(rules=(Rule("echo", "deny", origin="kep.toml rule 1"),))
    provider = Scripted([ToolCall.from_raw("c1", "echo", '{"text": "x"}'), StreamEnd("tool_use")],
                        [TextDelta("ok"), StreamEnd("end_turn")])
    await run_turn(store, sid, provider, "go", approval=deny)
    [rec] = store.tool_calls(sid)
    assert rec.status == "denied" and rec.decision == "deny" and rec.exit_code is None
    assert "denied by policy" in (rec.result or "")


async def test_resumed_session_keeps_usage_per_run_and_history(db: Path, project: Path) -> None:
    store = Store.open(db)
    sid = store.create_session(project, "fake/m")
    first = await run_turn(store, sid, tool_turn(), "one")
    history = store.load_messages(sid)
    provider = Scripted([TextDelta("two"), Usage(5, 1), StreamEnd("end_turn")])
    second = await run_turn(store, sid, provider, "again", history=history)
    assert store.load_messages(sid) == second.history
    assert second.history[: len(first.history)] == first.history
    info = store.session_info(sid)
    assert (info.input_tokens, info.output_tokens, info.title) == (35, 8, "one")


def test_streamed_text_survives_without_its_message_and_is_sealed_on_resume(
        db: Path, project: Path) -> None:
    store = Store.open(db)
    sid = store.create_session(project, "fake/m")
    store.record(sid, MessageAdded(Message("user", "tell me")))
    for part in ("Once ", "upon ", "a time"):
        store.record(sid, TextDelta(part))
    store.close()  # the process died here: no MessageAdded for the reply

    store = Store.open(db)
    assert store.load_messages(sid) == [Message("user", "tell me"),
                                        Message("assistant", "Once upon a time", interrupted=True)]
    assert store.session_info(sid).message_count == 2
    rec = SessionRecorder(store, sid)  # resuming seals the draft into a real message
    rec(MessageAdded(Message("user", "go on")))
    rec(TextDelta("The end."))
    rec(MessageAdded(Message("assistant", "The end.")))
    assert store.load_messages(sid) == [
        Message("user", "tell me"), Message("assistant", "Once upon a time", interrupted=True),
        Message("user", "go on"), Message("assistant", "The end.")]


def test_usage_mid_stream_without_a_recorder_leaves_the_draft_alone(db: Path,
                                                                    project: Path) -> None:
    store = Store.open(db)
    sid = store.create_session(project, "fake/m")
    for ev in (MessageAdded(Message("user", "q")), TextDelta("a"), Usage(3, 1), TextDelta("b"),
               MessageAdded(Message("assistant", "ab"))):
        store.record(sid, ev)
    assert store.load_messages(sid, for_resume=False) == [Message("user", "q"),
                                                          Message("assistant", "ab")]
    assert store.session_info(sid).input_tokens == 3

def test_calls_left_running_by_a_dead_process_get_an_error_result(db: Path, project: Path) -> None:
    store = Store.open(db)
    sid = store.create_session(project, "fake/m")
    calls = (ToolCall("a", "echo", {"text": "1"}), ToolCall("b", "echo", {"text": "2"}))
    store.record(sid, MessageAdded(Message("user", "two calls")))
    store.record(sid, MessageAdded(Message("assistant", "", tool_calls=calls)))
    for c in calls:
        store.record(sid, ToolCallRequested(c))
        store.record(sid, ToolCallStarted(c.id, c.name))
    store.record(sid, ToolFinished("a", "echo", "ok", 0, 3, "1"))
    store.record(sid, MessageAdded(Message("tool", "1", tool_call_id="a", name="echo")))
    assert len(store.load_messages(sid, for_resume=False)) == 3
    expected_tail = Message("tool", INTERRUPTED_CALL, tool_call_id="b", name="echo", is_error=True)
    assert store.load_messages(sid)[-1] == expected_tail  # valid to send to a model again

    SessionRecorder(store, sid)  # resume: the answer is written down, the call marked
    assert store.load_messages(sid, for_resume=False)[-1] == expected_tail
    assert [r.status for r in store.tool_calls(sid)] == ["ok", "interrupted"]


def test_a_retried_reply_is_kept_on_record_but_not_sent_again(db: Path, project: Path) -> None:
    store = Store.open(db)
    sid = store.create_session(project, "fake/m")
    for m in (Message("user", "hi"), Message("assistant", "Hel", interrupted=True),
              Message("assistant", "Hello!")):  # Conversation.retry() after a cut stream
        store.record(sid, MessageAdded(m))
    assert len(store.load_messages(sid, for_resume=False)) == 3
    assert store.load_messages(sid) == [Message("user", "hi"), Message("assistant", "Hello!")]


def test_a_damaged_database_is_an_error_naming_the_file(db: Path) -> None:
    db.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match=f"{db}: cannot open the session database"):
        Store.open(db)

def test_list_latest_and_id_prefixes(db: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    store = Store.open(db)
    a1 = store.create_session(a, "offline")
    b1 = store.create_session(b, "offline")
    a2 = store.create_session(a, "offline")
    store.record(a1, MessageAdded(Message("user", "newest activity")))
    assert store.latest_session(a) == a1
    assert [s.id for s in store.list_sessions(a)] == [a1, a2]
    assert {s.id for s in store.list_sessions()} == {a1, a2, b1}
    assert store.latest_session(tmp_path) is None
    assert store.resolve_id(a1[:5].upper()) == a1
    with pytest.raises(UnknownSession, match="no session"):
        store.resolve_id("zzzz")
    store._db.execute("UPDATE sessions SET id='abc00001' WHERE id=?", (a2,))
    store._db.execute("UPDATE sessions SET id='abc00002' WHERE id=?", (b1,))
    with pytest.raises(UnknownSession, match="ambiguous: abc00001, abc00002"):
        store.resolve_id("abc")


# ---- `kep sessions` ------------------------------------------------------------------------

async def recorded_session(project: Path) -> str:
    with Store.open() as store:  # the default path, under the isolated KEP_DATA_DIR
        sid = store.create_session(project, "fake/m")
        await run_turn(store, sid, tool_turn(), "please echo hi")
        store.record(sid, MessageAdded(Message("user", "and then?")))
        store.record(sid, TextDelta("Half a rep"))
    return sid


def kep(*argv: str) -> int:
    return cli.main(list(argv))


async def test_cli_list_show_and_unknown_id(project: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    sid = await recorded_session(project)
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.chdir(other)
    assert kep("sessions") == 0
    assert sid not in capsys.readouterr().out
    assert kep("sessions", "list", "--all") == 0
    out = capsys.readouterr().out
    assert sid in out and "please echo hi" in out and str(project.resolve()) in out

    monkeypatch.chdir(project)
    assert kep("sessions") == 0
    [row] = [line for line in capsys.readouterr().out.splitlines() if line.startswith(sid)]
    assert "fake/m" in row and " 6 " in row and "please echo hi" in row

    assert kep("sessions", "show", sid[:4]) == 0
    out = capsys.readouterr().out
    assert out.index("[user]\nplease echo hi") < out.index("[assistant]\nLet me echo.")
    assert '-> echo {"text": "hi"}  [ok · exit 0 · 7 ms' in out
    assert "[tool result: echo]\necho: hi" in out
    assert "[assistant (interrupted)]\nHalf a rep" in out

    with pytest.raises(SystemExit) as exc:
        kep("sessions", "show", "nope")
    assert exc.value.code == 2
    assert "no session 'nope'" in capsys.readouterr().err


async def test_cli_export_json_and_markdown(project: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    sid = await recorded_session(project)
    monkeypatch.chdir(project)
    assert kep("sessions", "export", sid, "--format", "json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["session"]["id"] == sid and doc["session"]["title"] == "please echo hi"
    assert [m["role"] for m in doc["messages"]] == ["user", "assistant", "tool", "assistant",
                                                    "user", "assistant"]
    assert doc["messages"][-1] == {"role": "assistant", "content": "Half a rep",
                                   "interrupted": True}
    assert doc["tool_calls"][0]["exit_code"] == 0 and doc["tool_calls"][0]["status"] == "ok"

    target = tmp_path / "out.md"
    assert kep("sessions", "export", sid, "--format", "md", "-o", str(target)) == 0
    md = target.read_text()
    assert md.startswith(f"# Session {sid}: please echo hi\n")
    assert "## User\n\nplease echo hi" in md
    assert "**Tool call** `echo` (ok · exit 0 · 7 ms" in md
    assert '```json\n{\n  "text": "hi"\n}\n```' in md
    assert "## Assistant (interrupted)\n\nHalf a rep" in md and "*(reply interrupted)*" in md


def test_database_file_is_private(db: Path) -> None:
    Store.open(db).close()
    assert db.stat().st_mode & 0o077 == 0


# ---- SIGKILL while writing ----------------------------------------------------------------

WRITER = r"""
import sys
from tuiapp.conversation.store import Store
from tuiapp.vocab.events import MessageAdded, TextDelta
from tuiapp.vocab.messages import Message
import json
store = Store.open(sys.argv[1])
sid = store.create_session(sys.argv[2], "fake/m")
print(sid, flush=True)
for kind, text in json.loads(sys.argv[3]):
    if kind == "delta":
        store.record(sid, TextDelta(text))
    else:
        store.record(sid, MessageAdded(Message(kind, text)))
    print("ok", flush=True)  # the event is committed
"""


def writer_events(rng: random.Random) -> list[tuple[str, str]]:
    events: list[tuple[str, str]] = []
    for i in range(150):
        events.append(("user", f"question {i}"))
        words = [f"w{i}.{j} " for j in range(rng.randint(0, 6))]
        events += [("delta", w) for w in words]
        if rng.random() < 0.8:  # else the stream is abandoned, as when a provider dies
            events.append(("assistant", "".join(words)))
    return events


def snapshots(events: list[tuple[str, str]]) -> list[list[Message]]:
    """What load_messages must return after each prefix of the events."""
    msgs: list[Message] = []
    draft: str | None = None
    out = [[]]
    for kind, text in events:
        if kind == "delta":
            draft = (draft or "") + text
        else:
            if kind == "user" and draft is not None:
                msgs.append(Message("assistant", draft, interrupted=True))
            msgs.append(Message(kind, text))  # type: ignore[arg-type]
            draft = None
        out.append(msgs + ([Message("assistant", draft, interrupted=True)] if draft is not None
                           else []))
    return out


def test_killed_writer_loses_at_most_the_event_in_flight(db: Path, project: Path) -> None:
    rng = random.Random(1234)
    for _ in range(5):
        events = writer_events(rng)
        expected = snapshots(events)
        child = subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(project),
                                  json.dumps(events)], stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        sid = child.stdout.readline().strip()
        acked = 0
        for _ in range(rng.randint(1, 250)):
            if child.stdout.readline() != "ok\n":
                break
            acked += 1
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()

        with sqlite3.connect(db) as raw:
            assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        with Store.open(db) as store:
            got = store.load_messages(sid, for_resume=False)
        # Every acknowledged event is there; the child may have committed more before dying.
        assert any(got == snap for snap in expected[acked:]), (acked, got[-3:])


def test_rereading_a_history_sees_every_change_from_any_connection(tmp_path: Path) -> None:
    """Resuming reads a session twice; the second read may reuse the first, never stale."""
    from tuiapp.vocab.events import MessageAdded, TextDelta
    from tuiapp.vocab.messages import Message

    store = Store.open(tmp_path / "s.db")
    sid = store.create_session(tmp_path, "m")
    store.record(sid, MessageAdded(Message("user", "one")))
    first = store.load_messages(sid, for_resume=False)
    first.append(Message("user", "not in the store"))  # the caller's list is its own
    assert [m.content for m in store.load_messages(sid, for_resume=False)] == ["one"]
    store.record(sid, TextDelta("streaming"))  # a draft: shown as an interrupted reply
    assert [m.content for m in store.load_messages(sid, for_resume=False)] == ["one", "streaming"]
    other = Store.open(tmp_path / "s.db")  # another kep (or thread) writes
    other.record(sid, MessageAdded(Message("assistant", "two")))
    other.close()
    assert [m.content for m in store.load_messages(sid, for_resume=False)] == ["one", "two"]
    store.record(sid, MessageAdded(Message("user", "three")))
    assert [m.content for m in store.load_messages(sid)] == ["one", "two", "three"]
    store.close()
