"""Sessions at scale: resuming a 10,000-message session, and listing 1,000 sessions.

    .venv/bin/python tests/bench/resume.py [--rounds 3] [--messages 10000] [--sessions 1000]

Builds a throwaway data dir holding one project's `--sessions` sessions (two messages each),
the newest of them `--messages` long (user questions, markdown replies, a tool call every tenth
turn). Then, alternating with a bare Textual app as the baseline of the same run:
  resume  `kep --continue --model offline` in a pseudo-terminal, from process start until
          the newest reply is on screen (target <= 1 s)
  list    `kep sessions list` as a whole process, wall and CPU (target <= 200 ms)
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _common import REPO, isolated_env, median, temp_home, verdict
from ui_startup import HELLO, run_in_pty

LAST = "the very last reply, number"


def build(project: str, messages: int, sessions: int) -> None:
    from tuiapp.conversation.store import Store
    from tuiapp.vocab.events import MessageAdded
    from tuiapp.vocab.messages import Message, ToolCall

    with Store.open() as store:
        for i in range(sessions - 1):
            sid = store.create_session(project, "offline")
            store.record(sid, MessageAdded(Message("user", f"question {i} about things")))
            store.record(sid, MessageAdded(Message("assistant", f"answer {i}")))
        sid = store.create_session(project, "offline")
        turns = messages // 2
        for t in range(turns):
            store.record(sid, MessageAdded(Message("user", f"question {t}: how does it work?")))
            text = (f"## Answer {t}\n\nIt works like **this**, mostly:\n\n- one\n- two\n\n"
                    f"```python\nprint({t})\n```\n")
            if t == turns - 1:
                text = f"{LAST} {t}."
            if t % 10 == 5:
                call = ToolCall(f"call_{t}", "read_file", {"path": f"f{t}.txt"})
                store.record(sid, MessageAdded(Message("assistant", "", tool_calls=(call,))))
                store.record(sid, MessageAdded(Message("tool", f"contents {t}",
                                                       tool_call_id=call.id)))
            store.record(sid, MessageAdded(Message("assistant", text)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--sessions", type=int, default=1_000)
    args = parser.parse_args()

    home = temp_home("kep-bench-resume-")
    try:
        return run(args, home)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def run(args: argparse.Namespace, home: Path) -> int:
    env = isolated_env(home)
    env["TERM"] = "xterm-256color"
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "tuiapp")], env=env,
                   stdout=subprocess.DEVNULL, check=False)
    project = home / "project"
    (project / "prompts" / "functions").mkdir(parents=True)
    (project / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    t0 = time.perf_counter()
    build(str(project), args.messages, args.sessions)
    print(f"built {args.sessions} sessions, the newest {args.messages} messages long, in "
          f"{time.perf_counter() - t0:.1f} s")
    hello = home / "hello.py"
    hello.write_text(HELLO)
    kep = [sys.executable, "-m", "tuiapp", "--project", str(project)]
    resume = [*kep, "--continue", "--model", "offline"]
    marker = f"{LAST} {args.messages // 2 - 1}.".encode()

    run_in_pty(resume, env, b"offline", marker, timeout=120)  # warm-up (page cache, bytecode)
    run_in_pty([sys.executable, str(hello)], env, b"hello world", b"hello world")
    hello_s: list[float] = []
    resume_s: list[float] = []
    list_s: list[float] = []
    list_cpu: list[float] = []
    for _ in range(args.rounds):
        hello_s.append(run_in_pty([sys.executable, str(hello)], env, b"hello world",
                                  b"hello world").ready)
        resume_s.append(run_in_pty(resume, env, b"offline", marker, timeout=120).ready)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        out = subprocess.run([*kep, "sessions", "list"], env=env, capture_output=True,
                             text=True, cwd=project, check=True)
        list_s.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        list_cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        assert len(out.stdout.splitlines()) > args.sessions // 2, out.stdout[-500:]

    h, r, ls = median(hello_s), median(resume_s), median(list_s)
    print(f"medians of {args.rounds} alternating rounds; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    print(f"textual hello-world first frame   {h * 1000:7.0f} ms")
    print(f"kep --continue, newest reply shown {r * 1000:7.0f} ms  ({r / h:.1f}x hello; "
          f"target <= 1000 ms: {verdict(r <= 1.0)})")
    print(f"kep sessions list ({args.sessions})     {ls * 1000:7.0f} ms wall "
          f"{median(list_cpu) * 1000:.0f} ms cpu  (target <= 200 ms: {verdict(ls <= 0.2)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
