"""What the script formats share: interpreters, shebangs, environments, `.env`, child runners.

Everything here is about building argv/env for a CHILD process; nothing runs user code.
"""

from __future__ import annotations

import os
import sys
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path

from tuiapp.security import project_items, trust
from tuiapp.tools.formats.base import FormatContext
from tuiapp.tools.shebang import read_shebang

HERE = Path(__file__).resolve().parent
CHILD_PYTHON = HERE / "_child_python.py"
CHILD_JS = HERE / "_child_js.mjs"


def environ(ctx: FormatContext) -> dict[str, str]:
    """The environment a tool would start with (kep's, plus the context's additions), without
    the secrets a tool never gets (secrets.child_env)."""
    from tuiapp.security import secrets

    return secrets.child_env(ctx.config, {**os.environ, **ctx.env})


def which(command: str, ctx: FormatContext) -> str | None:
    if os.sep in command:
        return command if os.access(command, os.X_OK) else None
    import shutil  # shutil and shlex: only when declaring, not on the warm path

    return shutil.which(command, path=environ(ctx).get("PATH"))


def dotenv_values(*files: Path) -> dict[str, str]:
    """Variables of the first file that sets each (python-dotenv's quoting rules)."""
    out: dict[str, str] = {}
    for file in files:
        if not file.is_file():
            continue
        from dotenv import dotenv_values as read

        for k, v in read(file).items():
            if v is not None and k not in out:
                out[k] = v
    return out


def unset_only(values: Mapping[str, str], ctx: FormatContext) -> dict[str, str]:
    """`.env` semantics: never override a variable that is already set."""
    env = environ(ctx)
    return {k: v for k, v in values.items() if k not in env}


def env_salt(ctx: FormatContext, dotenv_files: Iterable[Path] = ()) -> str:
    """Cache salt for declarations that depend on PATH, set variables and .env files (`@env X!`,
    `@meta require-tools`, a shebang's interpreter): any change re-declares."""
    env = environ(ctx)
    parts = [env.get("PATH", ""), ",".join(sorted(k for k, v in env.items() if v))]
    for f in dotenv_files:
        try:
            st = f.stat()
            parts.append(f"{f}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append(f"{f}:-")
    data = "\0".join(parts).encode()
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"  # zlib: cheaper to import


def shebang(path: Path) -> list[str] | None:
    """The interpreter argv of a `#!` first line, or None."""
    line = read_shebang(path)
    if line is None:
        return None
    try:
        argv = _split(line)
    except ValueError:
        return None
    return argv or None


def program_of(argv: list[str]) -> str:
    """The program an interpreter argv really needs (`/usr/bin/env -S python3 -u` → python3)."""
    if Path(argv[0]).name == "env":
        for a in argv[1:]:
            if not a.startswith("-") and "=" not in a:
                return a
    return argv[0]


def missing_program(argv: list[str], ctx: FormatContext) -> str | None:
    """The program of `argv` when it is not installed, else None."""
    for prog in dict.fromkeys([argv[0], program_of(argv)]):
        if which(prog, ctx) is None:
            return prog
    return None


def python_argv(ctx: FormatContext) -> list[str]:
    """The interpreter for Python tools without a shebang: `[tools] python`, else the project's
    .venv, else `python3` on PATH (as llm-functions and Loki use), else kep's own."""
    configured = getattr(ctx.config.tools, "python", None)
    if configured:
        return _split(configured)
    venv = ctx.project_root / project_items.VENV_PYTHON
    # A checkout's interpreter runs the user's own packs too: only once it is trusted.
    if os.access(venv, os.X_OK) and trust.state_of(ctx.config).allows(
            project_items.venv_item()[0]):
        return [str(venv)]
    found = which("python3", ctx) or which("python", ctx)
    return [found or sys.executable]


def ts_runtime(ctx: FormatContext) -> tuple[list[str] | None, str]:
    """(argv, why-not) for TypeScript: `[tools] ts_runtime`, else `tsx` on PATH, else `npx tsx`."""
    configured = getattr(ctx.config.tools, "ts_runtime", None)
    if configured:
        argv = _split(configured)
        missing = missing_program(argv, ctx)
        if missing:
            return None, f"the TypeScript runtime `{missing}` ([tools] ts_runtime) is not installed"
        return argv, ""
    if which("node", ctx) is None:
        return None, "TypeScript tools need Node.js (run with `npx tsx`): node is not on PATH"
    tsx = which("tsx", ctx)
    if tsx and not _inside(tsx, ctx.project_root):
        return [tsx], ""
    if which("npx", ctx) is None:
        return None, "TypeScript tools need `npx tsx` (or tsx on PATH): npx is not on PATH"
    if trust.state_of(ctx.config).allows(project_items.node_item()[0]):
        return ["npx", "--yes", "tsx"], ""
    # npx prefers the project's node_modules/.bin: a checkout not trusted for its programs
    # gets tsx from npm's cache instead, looked up from kep's own folder.
    return ["npx", "--yes", f"--prefix={node_prefix()}", "tsx"], ""


def _inside(path: str, root: Path) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(root)
    return real == base or real.startswith(base + os.sep)


def node_prefix() -> str:
    """An empty folder of kep's own where npx looks for local programs (none are there)."""
    from tuiapp.settings import paths

    prefix = paths.cache_dir() / "npx-prefix"
    prefix.mkdir(parents=True, exist_ok=True)
    return str(prefix)


def python_env() -> dict[str, str]:
    # Tool output should stream into its pane, not arrive in one block at exit.
    return {"PYTHONUNBUFFERED": "1"}


def text_result(stdout: str, output_file_text: str | None) -> str:
    """llm-functions/Loki: what the tool wrote to $LLM_OUTPUT; if nothing, its stdout (a tool
    that prints its answer still answers); if neither, "DONE" (as AIChat)."""
    if output_file_text and output_file_text.strip():
        return output_file_text.rstrip("\n")
    if stdout.strip():
        return stdout.rstrip("\n")
    return "DONE"


def _split(line: str) -> list[str]:
    import shlex

    return shlex.split(line)
