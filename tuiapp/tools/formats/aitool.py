"""AITool classes (FORMATS.md §5) in configured modules or directories.

`[[tools.sources]] format = "aitool"`, `path` = a .py file, a directory (every .py under it)
or a dotted module name resolved under the project root. Classes are duck-typed (`name`,
`description`, `parameters_schema`, `execute`), found and instantiated in a child; calls run
there too: arguments validated with jsonschema, `execute` sync or async, as `execute(**args)`
or `execute(arguments=args)`, and an `{"error": …}` result is a tool error (non-zero exit).

A host application often prepares things its tools rely on (a singleton, a config) before it
builds them: a source's `setup = "module:function"` (called with `setup_args`) runs in the
tool's process first, and `init.ClassName = {…}` gives a class its constructor arguments.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tuiapp.tools.formats import child_listing, runtimes
from tuiapp.tools.formats.base import FormatContext, ToolFormat, ToolLoadError
from tuiapp.tools.schema import schema_error
from tuiapp.vocab.tool_specs import Invocation, ToolSpec

SKIP_DIRS = {"__pycache__", "node_modules", ".venv", "venv", ".git"}


def resolve_source(path: str, project_root: Path) -> Path | None:
    p = Path(path).expanduser()
    p = p if p.is_absolute() else project_root / p
    if p.exists():
        return p
    if path.replace(".", "").replace("_", "").isalnum():  # a dotted module name
        base = project_root.joinpath(*path.split("."))
        for candidate in (base.with_suffix(".py"), base):
            if candidate.exists():
                return candidate
    return None


class AIToolFormat(ToolFormat):
    name = "aitool"

    def roots(self, ctx: FormatContext) -> list[Path]:
        out = []
        for src in ctx.config.tools.sources:
            if src.format == self.name:
                p = resolve_source(src.path, ctx.project_root)
                if p is not None:
                    out.append(p)
        return list(dict.fromkeys(out))

    def candidates(self, root: Path) -> Iterable[Path]:
        if root.is_file():
            return [root] if root.suffix == ".py" else []
        out = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames
                                 if d not in SKIP_DIRS and not d.startswith("."))
            out += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py")]
        return out

    def cache_salt(self, path: Path, ctx: FormatContext) -> str:
        return " ".join(runtimes.python_argv(ctx)) + "|" + json.dumps(host(path, ctx))

    async def declare(self, path: Path, ctx: FormatContext) -> list[ToolSpec]:
        specs = []
        env = host_env(host(path, ctx))
        for tool in await child_listing.describe("ait-describe", path, ctx, env):
            name, cls = tool.get("name"), tool["class"]
            if not isinstance(name, str) or not name:
                raise ToolLoadError(f"{cls}.name must be a non-empty string")
            params = tool.get("parameters")
            problem = schema_error(params)
            if problem:
                raise ToolLoadError(f"{cls}.parameters_schema: {problem}")
            run = {"file": str(path.absolute()), "class": cls, "host": host(path, ctx),
                   "system_prompt": tool.get("instructions", ""),
                   "category": tool.get("category"), "tags": tool.get("tags", [])}
            specs.append(ToolSpec(name, str(tool.get("description") or ""), params, self.name,
                                  str(path), run=run))
        return specs

    def invocation(self, spec: ToolSpec, arguments: dict[str, Any],
                   ctx: FormatContext) -> Invocation:
        argv = [*runtimes.python_argv(ctx), str(runtimes.CHILD_PYTHON), "ait-call",
                spec.run["file"], spec.run["class"]]
        env = {**runtimes.python_env(), **host_env(spec.run.get("host") or {})}
        return Invocation(argv, stdin=json.dumps(arguments).encode(), env=env)


def host(path: Path, ctx: FormatContext) -> dict[str, Any]:
    """What the source holding `path` asks of the host: its set-up hook and constructor
    arguments ({} when none). The first source whose path contains the file decides."""
    for src in ctx.config.tools.sources:
        if src.format != "aitool" or not (src.setup or src.init):
            continue
        root = resolve_source(src.path, ctx.project_root)
        if root is not None and (path == root or root in path.parents):
            return {"setup": src.setup, "setup_args": src.setup_args, "init": src.init,
                    "root": str(ctx.project_root)}
    return {}


def host_env(data: dict[str, Any]) -> dict[str, str]:
    return {"KEP_AITOOL_HOST": json.dumps(data, default=str)} if data else {}
