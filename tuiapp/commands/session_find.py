"""`kep sessions search WORDS [--all] [--json] [--limit N]`: the best messages holding every
word, with their session, time and a highlighted snippet."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tuiapp.commands._common import fail
from tuiapp.conversation import transcript
from tuiapp.conversation.session_search import SearchError, SearchHit
from tuiapp.conversation.store import Store
from tuiapp.security.display import json_printable, printable_line


def main(store: Store, args: argparse.Namespace, root: Path) -> int:
    every = bool(getattr(args, "all", False))
    words = " ".join(args.words)
    try:
        hits = store.search(words, None if every else root, limit=max(1, args.limit))
    except SearchError as e:
        fail(str(e))
    if args.json:
        print(json_printable(json.dumps([h.to_dict() for h in hits], ensure_ascii=False)))
        return 0
    if not hits:
        where = "" if every else " in this project (`--all` for every project)"
        print(f"no message holds {printable_line(words)!s}{where}")
        return 0
    for h in hits:
        print(heading(h, every))
        print("    " + snippet(h))
    print("open one with: kep --session ID  (or /search in kep)")
    return 0


def heading(h: SearchHit, every: bool) -> str:
    title = printable_line(h.title or "(no title)")
    line = f"{h.session_id}  #{h.seq:<4} {transcript.when(h.created)}  {h.role:<9}  {title}"
    return line + (f"  {printable_line(h.project_root)}" if every else "")


def snippet(h: SearchHit) -> str:
    """The snippet on one line, the words found in [brackets] (the same in a pipe as on a
    terminal: no escape sequences of our own)."""
    out = []
    for text, lit in h.pieces:
        shown = printable_line(text)  # the display edge: nothing in a message drives the terminal
        out.append(f"[{shown}]" if lit else shown)
    return "".join(out)
