"""Every process kep starts goes through one module, tuiapp/security/sandbox/spawn.py, which
puts it behind the sandbox's walls (or names why it may not be: the watchdog, the editor).
This scans the source tree: a new way of starting a process anywhere else fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import tuiapp

PKG = Path(tuiapp.__file__).resolve().parent
THE_ONE = PKG / "security" / "sandbox" / "spawn.py"
# Programs that run INSIDE the sandbox (never in kep): the fork server forks the listings it
# runs, in the tool's own interpreter and its own walls; the call starter forks and execs each
# call it is handed (a lister: posix_spawn from a thread), behind the walls it was started in.
INSIDE = {PKG / "tools" / "forkserver_boot.py", PKG / "tools" / "formats" / "_child_python.py",
          PKG / "security" / "sandbox" / "_child_starter.py",
          PKG / "security" / "sandbox" / "_child_listing_starter.py"}

STARTERS = {
    "subprocess": {"Popen", "run", "call", "check_call", "check_output", "getoutput",
                   "getstatusoutput"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "anyio": {"open_process", "run_process"},
    "os": {"fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp", "execv", "execve",
           "execvp", "execvpe", "execl", "execle", "execlp", "execlpe", "spawnv", "spawnve",
           "spawnvp", "spawnvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe"},
    "pty": {"fork", "spawn"},
    "multiprocessing": {"Process", "Pool"},
}
METHODS = {"subprocess_exec", "subprocess_shell"}  # loop.subprocess_exec(…)
MODULES = {"subprocess", "pty", "multiprocessing", "pexpect", "sh", "plumbum"}


def offences(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    typing_only = {id(n) for a in _annotations(tree) for n in ast.walk(a)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[0] in MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module:
            top = node.module.split(".")[0]
            names = {a.name for a in node.names}
            if (top in STARTERS and names & STARTERS[top]) or top in MODULES:
                found.append(f"from {node.module} import {', '.join(sorted(names))}")
        elif isinstance(node, ast.Attribute):
            base = node.value.id if isinstance(node.value, ast.Name) else None
            if (base in STARTERS and node.attr in STARTERS[base]) or node.attr in METHODS:
                found.append(f"{base or '…'}.{node.attr}")
    shown = path.relative_to(PKG.parent) if PKG.parent in path.parents else path
    return [f"{shown}:{what}" for what in found]


def _annotations(tree: ast.AST) -> list[ast.AST]:
    out: list[ast.AST] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.AnnAssign) or (isinstance(n, ast.arg) and n.annotation is not None):
            out.append(n.annotation)
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.returns is not None:
            out.append(n.returns)
    return out


def test_only_the_sandbox_starts_processes() -> None:
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        if path == THE_ONE or path in INSIDE:
            continue
        bad += offences(path)
    # `subprocess` imported for its constants (PIPE, DEVNULL) only is fine; a call is not.
    bad = [b for b in bad if not b.endswith(":import subprocess")
           or _calls_subprocess(PKG.parent / b.split(":")[0])]
    assert bad == [], "processes started outside security/sandbox/spawn.py:\n" + "\n".join(bad)


def _calls_subprocess(path: Path) -> bool:
    return any(":subprocess." in b for b in offences(path))


def test_the_scan_catches_each_way(tmp_path: Path) -> None:
    """The scan itself: each way of starting a process is found."""
    src = tmp_path / "x.py"
    for line in ("import subprocess\nsubprocess.run(['x'])", "import os\nos.fork()",
                 "import os\nos.execvp('x', ['x'])", "import pty\n",
                 "import asyncio\nasyncio.create_subprocess_exec('x')",
                 "loop.subprocess_exec(f, 'x')", "import anyio\nanyio.open_process(['x'])",
                 "from subprocess import Popen", "import os\nos.posix_spawn('x', [], {})"):
        src.write_text(line)
        assert offences(src) or _calls_subprocess(src), line
