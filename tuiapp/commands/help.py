"""`kep help [TOPIC]`: the topic pages (tuiapp/docs) in the terminal. With no topic, the list;
with a topic, its Markdown; with other words, the topics that mention them."""

from __future__ import annotations

import argparse
import sys

from tuiapp import docs
from tuiapp.security.display import printable_line


def main(args: argparse.Namespace) -> int:
    words = " ".join(args.topic or []).strip()
    if not words:
        print("kep help TOPIC  (or F1 in kep)\n")
        width = max(len(t) for t, _ in docs.TOPICS)
        for topic, summary in docs.TOPICS:
            print(f"  {topic:<{width}}  {summary}")
        return 0
    page = docs.path(words.lower())
    if page is not None:
        sys.stdout.write(page.read_text(encoding="utf-8"))
        return 0
    found = docs.search(words)
    shown = printable_line(words)
    if not found:
        print(f"kep: no topic or page mentions {shown!r}; `kep help` lists the topics",
              file=sys.stderr)
        return 2
    print(f"{shown!r} is not a topic; the topics that mention it:\n")
    for topic, line in found:
        print(f"  {topic}: {printable_line(line)[:100]}")
    return 0
