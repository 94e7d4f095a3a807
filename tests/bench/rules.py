"""Rule regexes in linear time (issue 24 item 5): 1 MB of arguments against the README's
approval rules, decided by policy.decide, against the engine kep used before (Python's `re`
on the same texts) on a small input, in the same run.

    .venv/bin/python tests/bench/rules.py
"""

from __future__ import annotations

import re
import statistics
import sys
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tuiapp.security import argument_text, policy  # noqa: E402
from tuiapp.settings import config  # noqa: E402
from tuiapp.vocab.messages import ToolCall, canonical_json  # noqa: E402

GOAL_MS = 50.0


def readme_rules() -> config.ApprovalConfig:  # type: ignore[name-defined]
    """The documented example rules (the first TOML block of the approval topic)."""
    text = (REPO / "tuiapp" / "docs" / "approval.md").read_text()
    begin = text.index("```toml") + len("```toml")
    block = text[begin:text.index("```", begin)]
    return config.parse(tomllib.loads(block), "README", REPO).approval


def old_decide(call: ToolCall, approval) -> str:  # type: ignore[no-untyped-def]
    """The engine before: Python's re, on the event loop."""
    for rule in approval.rules:
        if rule.action == "deny" and re.fullmatch(rule.tool, call.name) and (
                rule.args is None or any(re.search(rule.args, t) for t in argument_text.texts(
                    call.arguments, call.raw_arguments, ()))):
            return "deny"
    for rule in approval.rules:
        if rule.action != "deny" and re.fullmatch(rule.tool, call.name) and (
                rule.args is None or re.search(rule.args, canonical_json(call.arguments))):
            return rule.action
    return approval.default


CPU: list[float] = []  # the CPU time of each timed() call, ms (less bent by a loaded machine)


def timed(fn, repeat: int = 5) -> float:  # type: ignore[no-untyped-def]
    """Median wall time in ms (CPU time kept in CPU)."""
    times, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    CPU.append(statistics.median(cpu) * 1000)
    return statistics.median(times) * 1000


def call(cmd: str) -> ToolCall:
    args = {"cmd": cmd}
    return ToolCall("c", "execcmd", args, canonical_json(args))


def main() -> None:
    approval = readme_rules()
    print(f"README rules: {len(approval.rules)}")
    small = call("rm " * 2000)  # 6 KB
    base = timed(lambda: old_decide(small, approval), repeat=1)
    new_small = timed(lambda: policy.decide(small, approval, {}, spec=None))
    print(f"before (Python re), {len(small.raw_arguments) / 1024:.0f} KB of `rm rm …`: "
          f"{base:.1f} ms; now: {new_small:.2f} ms")
    cases = {
        "`rm rm rm …`": call("rm " * 350_000),
        "`git status` + 1 MB of words": call("git status " + "file.txt " * 116_000),
        "1 MB of `a`": call("a" * 1_000_000),
        "`rm -r` at the end of 1 MB": call("rm " * 349_999 + "-r x"),
        "non-ASCII, 1 MB": call("rm é " * 200_000),
    }
    worst, worst_cpu = 0.0, 0.0
    for name, c in cases.items():
        ms = timed(lambda c=c: policy.decide(c, approval, {}, spec=None))
        verdict = policy.decide(c, approval, {}, spec=None).action
        worst, worst_cpu = max(worst, ms), max(worst_cpu, CPU[-1])
        print(f"now, {len(c.raw_arguments) / 1e6:.2f} MB, {name}: {ms:.1f} ms wall, "
              f"{CPU[-1]:.1f} ms CPU ({verdict})")
    import os

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (figures scale with it)")
    print(f"worst 1 MB decision: {worst:.1f} ms wall, {worst_cpu:.1f} ms CPU (goal < "
          f"{GOAL_MS:.0f} ms: {'met' if worst < GOAL_MS else 'NOT met'} in wall time); the old "
          f"engine took {base / worst:.1f}x that on 6 KB, and grows much faster than linearly")


if __name__ == "__main__":
    main()
