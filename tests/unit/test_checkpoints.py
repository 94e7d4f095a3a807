"""Issue 28 item 5: every file kep's built-ins write is checkpointed in the session store;
undo puts it back through kep's own write path (never outside the root, never through a link
swapped in since); `kep sessions fork ID --at N` keeps the original."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tuiapp import cli
from tuiapp.conversation import checkpoints, session_admin
from tuiapp.conversation.file_undo import undo, writer
from tuiapp.conversation.store import Store
from tuiapp.settings import config
from tuiapp.tools.runner import Runner
from tuiapp.vocab.events import Event, FileCheckpointed, MessageAdded, ToolFinished
from tuiapp.vocab.messages import Message, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

IDS = itertools.count()


def spec(name: str) -> ToolSpec:
    w = writer()
    return ToolSpec(name, "", {"type": "object"}, "keprompt", w.source, run=dict(w.run))


@pytest.fixture
def env(project: Path, tmp_path: Path) -> tuple[Store, str, Runner]:
    store = Store.open(tmp_path / "s.db")
    sid = store.create_session(project, "offline")
    store.record(sid, MessageAdded(Message("user", "hi")))
    runner = Runner(config.parse({"tools": {"builtins": True}}, "test", project),
                    spool_dir=tmp_path / "spool")
    return store, sid, runner


async def write(store: Store, sid: str, runner: Runner, project: Path, name: str,
                args: dict) -> ToolFinished:
    """A call as the conversation makes it: checkpointed, then run."""
    call = ToolCall(f"c{next(IDS)}", name, args)
    events: list[Event] = []
    fin = await checkpoints.checkpointing(runner.execute, project)(spec(name), call,
                                                                     events.append)
    for e in events:
        if isinstance(e, FileCheckpointed):
            store.record(sid, e)
    assert fin.status == "ok", fin.result
    return fin


async def test_undo_restores_the_last_calls_files_and_removes_new_ones(env, project) -> None:
    store, sid, runner = env
    (project / "a.txt").write_bytes(b"one\r\n\xff\n")
    await write(store, sid, runner, project, "writefile", {"filename": "a.txt", "content": "1"})
    await write(store, sid, runner, project, "editfile", {"filename": "a.txt", "edits": [
        {"search": "1", "replace": "2"}]})
    await write(store, sid, runner, project, "writefile", {"filename": "new/b.txt",
                                                          "content": "b"})
    done = await undo(store, sid, runner, last_call=True)
    assert not (project / "new/b.txt").exists() and "removed" in done.summary()
    assert not done.failed and "other tools" in done.summary()  # the panel's caveat
    assert (project / "a.txt").read_text() == "2"
    await undo(store, sid, runner, last_call=True)
    assert (project / "a.txt").read_text() == "1"
    await undo(store, sid, runner, last_call=True)
    assert (project / "a.txt").read_bytes() == b"one\r\n\xff\n"  # bytes exactly
    assert "nothing to undo" in (await undo(store, sid, runner, last_call=True)).summary()


async def test_a_link_swapped_in_after_the_checkpoint_is_never_followed(
        env, project: Path, tmp_path: Path) -> None:
    store, sid, runner = env
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.txt").write_text("OUTSIDE\n")
    (project / "a.txt").write_text("before\n")
    (project / "sub").mkdir()
    (project / "sub" / "c.txt").write_text("c before\n")
    await write(store, sid, runner, project, "writefile", {"filename": "a.txt", "content": "x"})
    await write(store, sid, runner, project, "writefile", {"filename": "sub/c.txt",
                                                          "content": "y"})
    # the file became a link out, and a folder became a link out
    (project / "a.txt").unlink()
    (project / "a.txt").symlink_to(outside / "a.txt")
    (project / "sub" / "c.txt").unlink()
    (project / "sub").rmdir()
    (project / "sub").symlink_to(outside)
    done = await undo(store, sid, runner)
    assert (outside / "a.txt").read_text() == "OUTSIDE\n"  # not written through the link
    assert not (outside / "c.txt").exists()
    assert not (project / "a.txt").is_symlink() and (project / "a.txt").read_text() == "before\n"
    assert any("sub/c.txt" in f and "outside the project root" in f for f in done.failed)


async def test_the_conversation_checkpoints_only_kep_s_file_writers(project: Path) -> None:
    events: list[Event] = []

    async def execute(s: ToolSpec, c: ToolCall, emit) -> ToolFinished:
        return ToolFinished(c.id, c.name, "ok", 0, 1, "")

    run = checkpoints.checkpointing(execute, project)
    (project / "a.txt").write_text("x")
    await run(spec("writefile"), ToolCall("1", "writefile", {"filename": "a.txt"}), events.append)
    other = ToolSpec("writefile", "", {}, "keprompt", str(project / "prompts/functions/files"))
    await run(other, ToolCall("2", "writefile", {"filename": "a.txt"}), events.append)
    await run(spec("readfile"), ToolCall("3", "readfile", {"filename": "a.txt"}), events.append)
    assert [(e.call_id, e.path, e.existed, e.content) for e in events] == [
        ("1", "a.txt", True, b"x")]


def test_fork_at_n_keeps_the_original(env, capsys: pytest.CaptureFixture[str]) -> None:
    store, sid, _ = env
    for i in range(4):
        store.record(sid, MessageAdded(Message("assistant" if i % 2 else "user", f"m{i}")))
    new = session_admin.fork(store, sid, 2)
    assert [m.content for m in store.load_messages(new)] == ["hi", "m0"]
    assert len(store.load_messages(sid)) == 5
    with pytest.raises(ValueError, match="between 0 and 5"):
        session_admin.fork(store, sid, 9)


def test_kep_sessions_fork_headless(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Store.open() as store:
        sid = store.create_session(project, "offline")
        for i in range(3):
            store.record(sid, MessageAdded(Message("user", f"m{i}")))
    assert cli.main(["sessions", "fork", sid, "--at", "2"]) == 0
    out = capsys.readouterr().out
    new = out.split("new session ")[1].split()[0]
    with Store.open() as store:
        assert [m.content for m in store.load_messages(new)] == ["m0", "m1"]
        assert len(store.load_messages(sid)) == 3


