"""Startup of the TUI vs a bare Textual hello-world, both measured in a pseudo-terminal.

    python tests/bench/ui_startup.py [--rounds 5] [--tools 200]

For each program: time from process start to the first frame (a text every frame shows appears
on the pty), and for kep to "ready" (the tools, listed from the warm cache, are on screen: the
first-run panel says "Tools found (N)"); then the idle RSS one second later. The two programs are
run alternately, `rounds` times each, and medians are compared. Target: kep / hello <= 1.5.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time
from dataclasses import dataclass
from pathlib import Path

from _common import REPO, isolated_env, median, rss_mb, temp_home, verdict, write_tools

HELLO = """\
from textual.app import App, ComposeResult
from textual.widgets import Static


class Hello(App):
    def compose(self) -> ComposeResult:
        yield Static("hello world")


Hello().run()
"""
SIZE = (120, 36)


@dataclass
class Run:
    first_frame: float
    ready: float
    rss_mb: float


def run_in_pty(argv: list[str], env: dict[str, str], first: bytes, ready: bytes,
               timeout: float = 30.0) -> Run:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                            start_new_session=True)
    os.close(slave)
    seen = b""
    t_first = t_ready = float("nan")
    try:
        while time.perf_counter() - t0 < timeout:
            readable, _, _ = select.select([master], [], [], 0.02)
            if not readable:
                continue
            try:
                data = os.read(master, 1 << 16)
            except OSError:
                break
            now = time.perf_counter() - t0
            # Keep a tail only: markers are short, screens are not.
            seen = seen[-4096:] + data
            if t_first != t_first and first in seen:
                t_first = now
            if t_ready != t_ready and ready in seen:
                t_ready = now
            if t_first == t_first and t_ready == t_ready:
                break
        else:
            raise TimeoutError(f"{argv}: no {ready!r} on screen after {timeout} s")
        # Idle for a second (drain output so the program never blocks on the pty), then RSS.
        end = time.perf_counter() + 1.0
        while (left := end - time.perf_counter()) > 0:
            if select.select([master], [], [], left)[0]:
                try:
                    os.read(master, 1 << 16)
                except OSError:
                    break
        rss = rss_mb(proc.pid)
    finally:
        proc.kill()
        proc.wait()
        os.close(master)
    return Run(t_first, t_ready, rss)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tools", type=int, default=200)
    args = parser.parse_args()

    home = temp_home("kep-bench-startup-")
    env = isolated_env(home)
    env["TERM"] = "xterm-256color"
    # Measure what an installed kep does: its modules have bytecode (pip compiles at install;
    # some sandboxes set PYTHONDONTWRITEBYTECODE, which would recompile kep on every start).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "tuiapp")], env=env,
                   stdout=subprocess.DEVNULL, check=False)
    project = home / "project"
    write_tools(project / "prompts" / "functions", args.tools)
    hello = home / "hello.py"
    hello.write_text(HELLO)
    kep_bin = Path(sys.executable).parent / "kep"
    kep = [str(kep_bin)] if kep_bin.exists() else [sys.executable, "-m", "tuiapp"]
    kep += ["--project", str(project)]

    # Warm the tool cache (and the OS file cache) once, as a user's second start would be.
    listed = subprocess.run([*kep[:-2], "functions", "--project", str(project)], env=env,
                            capture_output=True, text=True, cwd=REPO)
    if listed.returncode not in (0, 1):
        print(listed.stderr, file=sys.stderr)
        return 1
    run_in_pty([sys.executable, str(hello)], env, b"hello world", b"hello world")
    run_in_pty(kep, env, b"offline", b"Tools found (")

    hello_runs: list[Run] = []
    kep_runs: list[Run] = []
    for _ in range(args.rounds):
        hello_runs.append(run_in_pty([sys.executable, str(hello)], env, b"hello world",
                                     b"hello world"))
        kep_runs.append(run_in_pty(kep, env, b"offline", b"Tools found ("))

    def row(name: str, runs: list[Run]) -> tuple[float, float, float]:
        ff = median([r.first_frame for r in runs])
        rd = median([r.ready for r in runs])
        rss = median([r.rss_mb for r in runs])
        print(f"{name:<26} first frame {ff * 1000:7.0f} ms   ready {rd * 1000:7.0f} ms   "
              f"idle RSS {rss:6.1f} MB")
        return ff, rd, rss

    print(f"startup, median of {args.rounds} alternating runs, {SIZE[0]}x{SIZE[1]} pty, "
          f"{args.tools} cached tools")
    h_ff, _, h_rss = row("textual hello-world", hello_runs)
    k_ff, k_rd, k_rss = row(f"kep ({args.tools} tools)", kep_runs)
    ratio_ff, ratio_rd = k_ff / h_ff, k_rd / h_ff
    print(f"ratio first frame kep/hello: {ratio_ff:.2f}  "
          f"(target <= 1.5: {verdict(ratio_ff <= 1.5)})")
    print(f"ratio ready       kep/hello: {ratio_rd:.2f}")
    print(f"idle RSS kep {k_rss:.1f} MB vs hello {h_rss:.1f} MB (+{k_rss - h_rss:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
