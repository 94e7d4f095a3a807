"""The slash-command list with 200 `.prompt` files (issue 28): what the first `/` costs
(every file read and parsed once, kept while the list is open), and one keystroke's
filtering, against a project with no prompt files (the built-ins alone), in the same run.

    .venv/bin/python tests/bench/slash_list.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tuiapp.project import slash  # noqa: E402
from tuiapp.ui.slash.builtins import BUILTINS  # noqa: E402
from tuiapp.ui.slash.menu import Entry, matching  # noqa: E402

N = 200


def project(root: Path, n: int) -> SimpleNamespace:
    (root / "prompts").mkdir(parents=True)
    for i in range(n):
        (root / "prompts" / f"cmd{i:03}.prompt").write_text(
            f'.prompt {{"description": "command {i}", "params": {{"tone": "plain"}}}}\n'
            ".user <<tone>>: <<question>>\n.exec\n")
    return SimpleNamespace(root=root, mcp=None)


def timed(fn: object, runs: int = 20) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        empty, full = project(Path(tmp) / "empty", 0), project(Path(tmp) / "full", N)
        base = timed(lambda: slash.user_commands(empty, BUILTINS))
        opened = timed(lambda: slash.user_commands(full, BUILTINS))
        entries = [Entry(c.name, c.usage, c.description) for c in
                   slash.user_commands(full, BUILTINS)]
        key = timed(lambda: matching(entries, "cmd1"), runs=200)
    print(f"first '/' with no prompt files: {base:.2f} ms (median)")
    ratio = opened / max(base, 1e-6)
    print(f"first '/' with {N} prompt files: {opened:.2f} ms (median), ratio {ratio:.0f}x")
    print(f"one keystroke's filtering of {len(entries)} commands: {key * 1000:.0f} µs")


if __name__ == "__main__":
    main()
