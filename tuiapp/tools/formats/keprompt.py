"""keprompt external functions (FORMATS.md §1), kep's native format.

An executable in prompts/functions/ answers `EXE --list-functions` with a JSON array of
{"name","description","parameters"} and runs one function as `EXE NAME` with the JSON
arguments on stdin. Every way a file can fail becomes a one-line ToolLoadError.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tuiapp.settings import paths
from tuiapp.tools.formats.base import FormatContext, ProcResult, ToolFormat, ToolLoadError
from tuiapp.tools.shebang import read_shebang, spawn_error
from tuiapp.vocab.tool_specs import Invocation, ToolSpec

NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
SKIP_SUFFIXES = (".json", ".backup")
EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


class KepromptFormat(ToolFormat):
    name = "keprompt"

    def roots(self, ctx: FormatContext) -> list[Path]:
        """Project prompts/functions/, then [tools] dirs, then kep's built-ins (in priority)."""
        roots = [ctx.project_root / "prompts" / "functions"]
        for d in ctx.config.tools.dirs:
            p = Path(d).expanduser()
            roots.append(p if p.is_absolute() else ctx.project_root / p)
        if ctx.config.tools.builtins:
            roots.append(paths.builtin_functions_dir())
        unique: list[Path] = []
        seen: set[str] = set()
        for r in roots:
            key = os.path.realpath(r)  # kep's own checkout: project dir == built-ins dir
            if key not in seen:
                seen.add(key)
                unique.append(r)
        return unique

    def watch_recursive(self, root: Path) -> bool:
        return False  # only the directory's own files are tools

    def candidates(self, root: Path) -> Iterable[Path]:
        """Regular files with an exec bit, plus scripts that lack one (a forgotten chmod +x
        is reported, not ignored). Helper modules without a #! line are not candidates."""
        return [path for path, _ in self.stat_candidates(root)]

    def stat_candidates(self, root: Path) -> list[tuple[Path, os.stat_result]]:
        try:
            names = sorted(os.listdir(root))
        except OSError:
            return []
        out = []
        for name in names:
            if name.endswith(SKIP_SUFFIXES) or name.startswith("."):
                continue
            path = root / name
            try:
                st = os.stat(path)
            except OSError:
                continue  # dangling symlink, vanished file
            if not stat.S_ISREG(st.st_mode):
                continue
            if st.st_mode & 0o111 or read_shebang(path) is not None:
                out.append((path, st))
        return out

    async def declare(self, path: Path, ctx: FormatContext) -> list[ToolSpec]:
        try:
            mode = path.stat().st_mode
        except OSError as e:
            raise ToolLoadError(f"cannot read: {e.strerror}") from None
        if not mode & 0o111:
            raise ToolLoadError(f"not executable: run chmod +x {path}")
        timeout = ctx.config.tools.list_timeout
        try:
            res = await ctx.lister(
                [str(path), "--list-functions"],
                timeout=timeout,
                cwd=ctx.project_root,
                env=ctx.env or None,
            )
        except OSError as e:
            # A missing #! interpreter depends on the machine: checked again next time.
            known = e.errno in (errno.ENOEXEC, errno.EACCES) or (
                e.errno == errno.ENOENT and read_shebang(path) is None)
            raise ToolLoadError(spawn_error(path, e), transient=not known) from None
        if res.timed_out:
            raise ToolLoadError(
                f"--list-functions timed out after {timeout:g} s (its process group was killed)",
                transient=True,
            )
        if res.exit_code != 0:
            raise ToolLoadError(exit_error(path, res))
        if res.stdout_truncated:
            raise ToolLoadError("--list-functions printed more than 8 MiB")
        defs = parse_definitions(res.stdout.decode("utf-8", errors="replace"))
        return [
            ToolSpec(
                d["name"],
                d["description"],
                d["parameters"],
                self.name,
                str(path),
                run={"exe": str(path)},
            )
            for d in defs
        ]

    def invocation(
        self, spec: ToolSpec, arguments: dict[str, Any], ctx: FormatContext
    ) -> Invocation:
        exe = spec.run.get("exe") or spec.source
        return Invocation(argv=[exe, spec.name], stdin=json.dumps(arguments).encode())


# ---- error texts (one line each, saying what to fix) ---------------------------------------


def stderr_tail(data: bytes, limit: int = 240) -> str:
    lines = [ln.strip() for ln in data.decode("utf-8", errors="replace").splitlines() if ln.strip()]
    text = " | ".join(lines[-3:])
    return text if len(text) <= limit else "…" + text[-limit:]


def exit_error(path: Path, res: ProcResult) -> str:
    code = res.exit_code
    tail = stderr_tail(res.stderr)
    shebang = read_shebang(path)
    if code == 127 and shebang is not None and shebang.startswith("/usr/bin/env"):
        return f"no interpreter: #!{shebang} — {tail or 'command not found'}"
    what = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
    return (
        f"--list-functions failed ({what}): {tail}"
        if tail
        else (f"--list-functions failed ({what}) with nothing on stderr")
    )


def _kind(value: Any) -> str:
    return {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(value), "a value")


def parse_definitions(text: str) -> list[dict[str, Any]]:
    """Validated definitions from --list-functions output (wrapped form unwrapped)."""
    text = text.strip().lstrip("\ufeff")
    if not text:
        raise ToolLoadError("--list-functions printed nothing (expected a JSON array)")
    try:
        value = json.loads(text)
    except RecursionError:
        raise ToolLoadError("not JSON kep can read: nested too deeply") from None
    except json.JSONDecodeError as e:
        if e.msg == "Extra data":
            snippet = text[e.pos : e.pos + 40]
            raise ToolLoadError(
                f"not JSON: trailing text after the JSON at line {e.lineno} col {e.colno}: "
                f"{snippet!r}"
            ) from None
        raise ToolLoadError(
            f"not JSON: {e.msg} at line {e.lineno} col {e.colno}; output starts {text[:40]!r}"
        ) from None
    if not isinstance(value, list):
        raise ToolLoadError(
            f"wrong shape: --list-functions printed {_kind(value)}, "
            "expected an array of definitions"
        )
    return [_definition(i, item) for i, item in enumerate(value, 1)]


def _definition(i: int, item: Any) -> dict[str, Any]:
    from tuiapp.tools.schema import schema_error  # jsonschema: only when declaring

    if not isinstance(item, dict):
        raise ToolLoadError(f"wrong shape: item {i} is {_kind(item)}, expected an object")
    if item.get("type") == "function" and isinstance(item.get("function"), dict):
        item = item["function"]  # OpenAI's wrapped form
    name = item.get("name")
    if not isinstance(name, str):
        raise ToolLoadError(f'wrong shape: item {i} has no "name" string')
    if not NAME_RE.fullmatch(name):
        raise ToolLoadError(f"invalid name {name!r} (item {i}): use 1-64 letters, digits, _ or -")
    desc = item.get("description")
    if desc is None:
        raise ToolLoadError(f'wrong shape: {name} (item {i}) has no "description"')
    if not isinstance(desc, str):
        raise ToolLoadError(f"wrong shape: {name}: description must be a string, got {_kind(desc)}")
    params = item.get("parameters", EMPTY_PARAMETERS)
    problem = schema_error(params)
    if problem:
        raise ToolLoadError(f"invalid schema for {name}: {problem}")
    return {"name": name, "description": desc, "parameters": params}
