"""Loki custom tools (FORMATS.md §3): `functions/tools/*.{py,ts,sh}`.

Python `def run` with an `Args:` docstring, TypeScript `export function run` with JSDoc, Bash
with argc tags. Each file is one tool named after its file (lower-case, `_`-separated). A `#!`
first line overrides the runtime (python, `npx tsx`, bash). Calls run in a child through the
same runners as llm-functions; TypeScript's `run` gets its parameters positionally.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tuiapp.tools.formats import runtimes  # the parsers: imported when declaring
from tuiapp.tools.formats.base import FormatContext, ToolFormat, ToolLoadError
from tuiapp.tools.formats.llm_functions import OUTPUT_FILE
from tuiapp.tools.model import Invocation, ToolSpec
from tuiapp.tools.schema import schema_error

SUFFIXES = (".py", ".ts", ".sh")


def tools_dir(base: Path) -> Path:
    """A configured path may name the config dir, the functions dir or the tools dir itself."""
    for candidate in (base / "functions" / "tools", base / "tools"):
        if candidate.is_dir():
            return candidate
    return base


def tool_name(path: Path) -> str:
    return "_".join(t for t in re.split(r"[^a-z0-9]+", path.stem.lower()) if t)


def dotenv_files(path: Path) -> list[Path]:
    # Loki reads .env beside the tools; the functions dir's .env is honoured too.
    return [path.parent / ".env", path.parent.parent / ".env"]


class LokiFormat(ToolFormat):
    name = "loki"

    def roots(self, ctx: FormatContext) -> list[Path]:
        # The auto-detected root is listed even before it exists, so hot reload sees it appear.
        out = [ctx.project_root / "functions" / "tools"]
        for src in ctx.config.tools.sources:
            if src.format == self.name:
                p = Path(src.path).expanduser()
                out.append(tools_dir(p if p.is_absolute() else ctx.project_root / p))
        return list(dict.fromkeys(out))

    def watch_recursive(self, root: Path) -> bool:
        return False  # only the directory's own files are tools

    def candidates(self, root: Path) -> Iterable[Path]:
        try:
            names = sorted(os.listdir(root))
        except OSError:
            return []
        return [root / n for n in names
                if n.endswith(SUFFIXES) and not n.startswith(".") and (root / n).is_file()]

    def cache_salt(self, path: Path, ctx: FormatContext) -> str:
        tools = ctx.config.tools
        return runtimes.env_salt(ctx, dotenv_files(path)) + f"|{tools.python}|{tools.ts_runtime}"

    async def declare(self, path: Path, ctx: FormatContext) -> list[ToolSpec]:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            raise ToolLoadError(f"cannot read: {e.strerror}") from None
        path = path.absolute()  # it runs later with cwd = the project root
        name = tool_name(path)
        if not name:
            raise ToolLoadError("the file name gives no tool name")
        from tuiapp.tools.formats import argc_tags, js_sig, python_sig

        runtime = self._runtime(path, ctx)
        run: dict[str, Any] = {"file": str(path), "runtime": runtime}
        if path.suffix == ".py":
            rules = python_sig.Rules(reject_variadic=True, require_docstring=True)
            fns = python_sig.functions(text, rules, only="run")
            if not fns:
                raise ToolLoadError("no `def run(...)`: a Loki Python tool's entry point")
            fn = fns[0]
            description, parameters = fn.description, fn.parameters
            run.update(kind="python", function="run")
        elif path.suffix == ".ts":
            ts = js_sig.loki_ts(text)
            description, parameters = ts.description, ts.parameters
            run.update(kind="ts", function="run", arg_names=ts.arg_names)
        else:
            script = argc_tags.parse(text)
            if not script.root.description:
                raise ToolLoadError("no `# @describe` line")
            dotenv = runtimes.dotenv_values(*dotenv_files(path))
            env = runtimes.environ(ctx)
            argc_tags.check_requirements(
                script, lambda v: bool(env.get(v) or dotenv.get(v)),
                lambda prog: runtimes.which(prog, ctx) is not None)
            description, parameters = script.root.description, script.root.parameters()
            run.update(kind="bash", root_call=True, **argc_tags.run_data(script, script.root))
        if not description:
            raise ToolLoadError("no description: the docstring / JSDoc must say what the tool does")
        problem = schema_error(parameters)
        if problem:
            raise ToolLoadError(problem)
        return [ToolSpec(name, description, parameters, self.name, str(path), run=run)]

    def _runtime(self, path: Path, ctx: FormatContext) -> list[str]:
        """The interpreter argv: the #! line when there is one, else the language default."""
        argv = runtimes.shebang(path)
        if argv:
            missing = runtimes.missing_program(argv, ctx)
            if missing:
                raise ToolLoadError(f"the #! interpreter `{missing}` is not installed")
            return argv
        if path.suffix == ".py":
            return runtimes.python_argv(ctx)
        if path.suffix == ".ts":
            ts, why = runtimes.ts_runtime(ctx)
            if ts is None:
                raise ToolLoadError(why)
            return ts
        return ["bash"]

    def invocation(self, spec: ToolSpec, arguments: dict[str, Any],
                   ctx: FormatContext) -> Invocation:
        run = spec.run
        path = Path(run["file"])
        root = path.parent.parent.parent  # <config dir>/functions/tools/<file>
        env = runtimes.unset_only(runtimes.dotenv_values(*dotenv_files(path)), ctx)
        env.update(LLM_ROOT_DIR=str(root), LLM_TOOL_NAME=spec.name,
                   LLM_TOOL_CACHE_DIR=str(root / "cache" / spec.name))
        runtime = list(run["runtime"])
        data = json.dumps(arguments, ensure_ascii=False).encode()
        if run["kind"] == "python":
            env.update(runtimes.python_env())
            argv = [*runtime, str(runtimes.CHILD_PYTHON), "call", str(path), "run"]
            return Invocation(argv, stdin=data, env=env, output_file=OUTPUT_FILE)
        if run["kind"] == "ts":
            names = json.dumps(run["arg_names"])
            argv = [*runtime, str(runtimes.CHILD_JS), str(path), "run", "positional", names]
            return Invocation(argv, stdin=data, env=env, output_file=OUTPUT_FILE)
        from tuiapp.tools.formats import argc_tags

        program = argc_tags.bash_program(run, arguments, is_root=True)
        return Invocation([*runtime, "-c", program, str(path)], env=env, output_file=OUTPUT_FILE)

    def result_text(self, spec: ToolSpec, stdout: str, output_file_text: str | None) -> str:
        return runtimes.text_result(stdout, output_file_text)
