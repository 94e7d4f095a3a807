"""`@` completion over 10,000 project files (conversation.mention_index).

Prints the milliseconds to list the files (gitignore rules, hidden folders) next to a
baseline measured in the same run: a bare os.walk of the same tree (the least any listing
must do), and the milliseconds of one fuzzy match over the list next to a plain substring
filter. The figures to watch are the ratios (the machine's load moves both). Both run in a
worker thread in the app, so typing never waits for them.
Run: .venv/bin/python tests/bench/mention_complete.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tuiapp.conversation.mention_index import fuzzy, project_files_list


def best(f: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times) * 1000


def tree(root: Path) -> None:
    for i in range(100):
        d = root / f"pkg{i:03}" / "src"
        d.mkdir(parents=True)
        (d.parent / ".gitignore").write_text("*.pyc\nbuild/\n")
        for j in range(100):
            (d / f"module_{j:03}.py").touch()
    (root / ".gitignore").write_text("node_modules/\n*.log\n!keep.log\n")


def walk(root: Path) -> list[str]:
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tree(root)
        names = project_files_list(root)
        base_list = best(lambda: walk(root))
        ours_list = best(lambda: project_files_list(root))
        print(f"{len(names):,} files listed: {ours_list:.1f} ms; bare os.walk {base_list:.1f} ms "
              f"(x{ours_list / base_list:.1f})")
        for query in ("p42mod7", "module_099", "zzz"):
            base = best(lambda q=query: [n for n in names if q in n][:50])
            ours = best(lambda q=query: fuzzy(q, names))
            print(f"fuzzy {query!r}: {ours:.1f} ms; substring filter {base:.1f} ms "
                  f"(x{ours / base:.1f})")


if __name__ == "__main__":
    main()
