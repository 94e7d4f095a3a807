"""Extension packs (FORMATS.md §4): `extensions/**/*_tool.py` modules exporting NAME,
SYSTEM_PROMPT and TOOLS (a list of functions).

Each module is imported in a child (registered in sys.modules first); tool = the function's
name, schema from its signature, description = its docstring. Calls import the module in a
child again and normalise the return value (pydantic → JSON of model_dump(), dict/list → JSON,
else str()). Also here: the Light Schema (`kep functions --light-schema`).
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


class ExtensionFormat(ToolFormat):
    name = "extension"

    def roots(self, ctx: FormatContext) -> list[Path]:
        # The auto-detected root is listed even before it exists, so hot reload sees it appear.
        out = [ctx.project_root / "extensions"]
        for src in ctx.config.tools.sources:
            if src.format == self.name:
                p = Path(src.path).expanduser()
                out.append(p if p.is_absolute() else ctx.project_root / p)
        return list(dict.fromkeys(out))

    def candidates(self, root: Path) -> Iterable[Path]:
        if root.is_file():
            return [root] if root.name.endswith("_tool.py") else []
        out = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames
                                 if d not in SKIP_DIRS and not d.startswith("."))
            out += [Path(dirpath) / f for f in sorted(filenames) if f.endswith("_tool.py")]
        return out

    def cache_salt(self, path: Path, ctx: FormatContext) -> str:
        return " ".join(runtimes.python_argv(ctx))  # another interpreter may import differently

    async def declare(self, path: Path, ctx: FormatContext) -> list[ToolSpec]:
        pack = await child_listing.describe("ext-describe", path, ctx)
        specs = []
        for index, tool in enumerate(pack["tools"]):
            params = tool["parameters"]
            problem = schema_error(params)
            if problem:
                raise ToolLoadError(f"{tool['name']}: {problem}")
            run = {"file": str(path.absolute()), "function": tool["name"], "pack": pack["name"],
                   "system_prompt": pack["system_prompt"], "summary": tool["summary"],
                   "example": tool["example"], "index": index}
            specs.append(ToolSpec(tool["name"], tool["doc"] or tool["summary"], params, self.name,
                                  str(path), run=run))
        return specs

    def invocation(self, spec: ToolSpec, arguments: dict[str, Any],
                   ctx: FormatContext) -> Invocation:
        argv = [*runtimes.python_argv(ctx), str(runtimes.CHILD_PYTHON), "ext-call",
                spec.run["file"], spec.run["function"]]
        return Invocation(argv, stdin=json.dumps(arguments).encode(), env=runtimes.python_env())


def light_schema(specs: Iterable[ToolSpec]) -> str:
    """The Light Schema of every extension pack among `specs`, byte-exact (FORMATS.md §4):
    `NAME — first line of SYSTEM_PROMPT`, then `- tool: summary EX: "example"` per tool;
    packs separated by a blank line. No trailing newline."""
    packs: dict[str, list[ToolSpec]] = {}
    for spec in specs:
        if spec.format == "extension":
            packs.setdefault(spec.source, []).append(spec)
    sections = []
    for source in walk_order(packs):  # luna's discovery order; tools in TOOLS order
        tools = sorted(packs[source], key=lambda t: t.run.get("index", 0))
        run = tools[0].run
        first = next((ln.strip() for ln in run["system_prompt"].splitlines() if ln.strip()), "")
        name = run["pack"].strip()  # luna strips NAME
        lines = [f"{name} — {first}" if first else name]
        for t in tools:
            line = f"- {t.name}: {t.run['summary']}"
            if t.run["example"]:
                line += f' EX: "{t.run["example"]}"'
            lines.append(line)
        sections.append("\n".join(lines))
    return "\n\n".join(sections)


def walk_order(files: Iterable[str]) -> list[str]:
    """`files` in the order an unsorted top-down os.walk meets them, as luna discovers packs:
    in each directory its files first, then its subdirectories, both in listing order."""
    listings: dict[str, list[str]] = {}

    def position(parent: str, name: str) -> int:
        if parent not in listings:
            try:
                listings[parent] = os.listdir(parent)
            except OSError:
                listings[parent] = []
        names = listings[parent]
        return names.index(name) if name in names else len(names)

    paths = list(files)
    if not paths:
        return []
    top = os.path.commonpath([os.path.dirname(p) for p in paths])

    def key(path: str) -> list[tuple[int, int, str]]:
        parts = os.path.relpath(path, top).split(os.sep)
        out, parent = [], top
        for i, part in enumerate(parts):
            is_file = i == len(parts) - 1
            out.append((0 if is_file else 1, position(parent, part), part))
            parent = os.path.join(parent, part)
        return out

    return sorted(paths, key=key)
