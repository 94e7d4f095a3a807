"""What shell-aware approval costs per decision (a script, not collected by pytest).

    .venv/bin/python tests/bench/shell_rules.py

Decides the same command lines for kep's execcmd (split into simple commands, each decided)
and for a tool that is not shell-like (one decision on the whole line, as before), with the
README's rules, and prints the median time per decision and the ratio. Also the one-time
import of the parser."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

LINES = ["git status", "git status && git log --oneline | head -5",
         "ls -la src; pwd; cat README.md | grep kep > out.txt",
         "echo $(rm -rf /) `id`", "ls; " * 100 + "true", "x" * 4000]


def main() -> None:
    t0 = time.perf_counter()
    import bashlex  # noqa: F401

    imported = time.perf_counter() - t0
    from tuiapp.security.policy import decide
    from tuiapp.settings import config
    from tuiapp.settings.paths import builtin_functions_dir
    from tuiapp.vocab.messages import ToolCall
    from tuiapp.vocab.tool_specs import ToolSpec

    shell = str(builtin_functions_dir() / "shell")
    execcmd = ToolSpec("execcmd", "", {"type": "object"}, "keprompt", shell, run={"exe": shell})
    plain = ToolSpec("execcmd", "", {"type": "object"}, "keprompt", "/p/prompts/functions/x")
    approval = config.parse({"approval": {"rules": [
        {"tool": "execcmd", "action": "deny",
         "args": r"\brm\s+([^\s;&|]+\s+)*(-[a-zA-Z]*[rR]|--recursive)"},
        {"tool": "execcmd", "action": "allow",
         "args": r'^(?!.*\.\.)\{"cmd":"(ls|pwd|git (status|log|diff))'
                 r'( (-[a-zA-Z]+|[\w.][\w./-]*))*"\}$'},
    ]}}, "kep.toml", REPO).approval

    def timed(spec: ToolSpec, line: str) -> float:
        runs = []
        for _ in range(7):
            t = time.perf_counter()
            decide(ToolCall("1", "execcmd", {"cmd": line}), approval, {}, spec=spec)
            runs.append(time.perf_counter() - t)
        return statistics.median(runs)

    print(f"bashlex import (once): {imported * 1000:.0f} ms")
    for line in LINES:
        a, b = timed(execcmd, line), timed(plain, line)
        shown = line if len(line) < 50 else f"{line[:40]}… ({len(line)} chars)"
        print(f"{shown!r:60} shell-aware {a * 1000:7.2f} ms   whole line {b * 1000:6.2f} ms"
              f"   ratio {a / b:6.1f}x")


if __name__ == "__main__":
    main()
