"""`kep sessions [list [--all]] | show ID | export ID --format md|json [-o FILE] |
fork ID --at N | undo ID | rename ID TITLE | search WORDS [--all] [--json] | delete ID… |
prune --older-than AGE [--dry-run] [--all]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tuiapp.commands import session_find
from tuiapp.commands._common import fail, project_root
from tuiapp.conversation import session_admin, transcript
from tuiapp.conversation.store import SessionInfo, Store, UnknownSession
from tuiapp.conversation.store_schema import StoreError
from tuiapp.security.display import printable

TITLE_WIDTH = 60


def main(args: argparse.Namespace) -> int:
    action = getattr(args, "sessions_command", None) or "list"
    try:
        store = Store.open()
    except StoreError as e:
        fail(str(e), 1)
    with store:
        try:
            if action == "list":
                return _list(store, args)
            if action == "search":
                return session_find.main(store, args, project_root(args))
            if action in ("delete", "prune"):
                return _delete(store, args, action)
            sid = store.resolve_id(args.id)
            if action == "fork":
                try:
                    new = session_admin.fork(store, sid, args.at)
                except ValueError as e:
                    fail(str(e))
                print(f"forked session {sid} at message {args.at}: new session {new} "
                      f"(the original is kept)")
                return 0
            if action == "undo":
                return _undo(store, sid, args)
            if action == "rename":
                title = session_admin.rename(store, sid, " ".join(args.title))
                print(f"session {sid} is now titled: {title}")
                return 0
            t = transcript.Transcript.load(store, sid)
        except UnknownSession as e:
            fail(str(e))
    if action == "show":
        sys.stdout.write(transcript.to_text(t))  # (printable: core.display)
        return 0
    # (Exports keep the text but never a raw control character: core.display, applied in
    # core.transcript, so the TUI's export is the same.)
    text = transcript.to_markdown(t) if args.format == "md" else transcript.to_json(t)
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as e:
            fail(f"cannot write {args.output}: {e.strerror}", 1)
        print(f"wrote session {sid} to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _list(store: Store, args: argparse.Namespace) -> int:
    every = bool(getattr(args, "all", False))
    root = project_root(args)
    sessions = store.list_sessions(None if every else root, limit=1000)
    if not sessions:
        where = "" if every else f" for {root} (`kep sessions list --all` for every project)"
        print(f"no sessions{where}")
        return 0
    print(_row("ID", "UPDATED", "MODEL", "MSGS", "TITLE", "PROJECT" if every else None))
    for s in sessions:
        print(printable(_row(s.id, transcript.when(s.updated), s.model, str(s.message_count),
                             _title(s), s.project_root if every else None)))
    return 0


def _title(s: SessionInfo) -> str:
    title = (s.title or "(no message)").replace("\n", " ")
    return title if len(title) <= TITLE_WIDTH else title[: TITLE_WIDTH - 1] + "…"


def _row(sid: str, updated: str, model: str, count: str, title: str, project: str | None) -> str:
    line = f"{sid:<8}  {updated:<16}  {model:<24}  {count:>4}  {title}"
    if project is not None:
        line = f"{line:<{8 + 16 + 24 + 4 + 8 + TITLE_WIDTH}}  {project}"
    return line


def _delete(store: Store, args: argparse.Namespace, action: str) -> int:
    if action == "delete":
        doomed = [store.session_info(store.resolve_id(i)) for i in args.ids]
        dry = False
    else:
        try:
            age = session_admin.parse_age(args.older_than)
        except ValueError as e:
            fail(str(e))
        doomed = session_admin.older_than(store, age, None if args.all else project_root(args))
        dry = args.dry_run
    ids = [s.id for s in doomed]
    refused = session_admin.in_use(store, ids) if dry else session_admin.delete(store, ids)
    for s in doomed:
        if s.id in refused:
            print(f"kep: {refused[s.id]}; {'would not be' if dry else 'not'} deleted",
                  file=sys.stderr)
            continue
        print(f"{'would delete' if dry else 'deleted'} {s.id}  {transcript.when(s.updated)}  "
              f"{_title(s)}")
    if not doomed:
        print("no session matched")
    return 1 if refused and action == "delete" else 0


def _undo(store: Store, sid: str, args: argparse.Namespace) -> int:
    """The undo action, headless: the files the session's last file-writer call changed."""
    import asyncio

    from tuiapp.commands._common import load_config
    from tuiapp.conversation.file_undo import undo
    from tuiapp.project.workspace import Workspace

    async def go() -> str:
        ws = Workspace(load_config(args))
        try:
            return (await undo(store, sid, ws.runner("kep-undo"), last_call=True)).summary()
        finally:
            await ws.aclose()

    print(printable(asyncio.run(go())))
    return 0
