"""Loki custom tools (FORMATS.md §3): `functions/tools/*.{py,ts,sh}` and the tools of
`agents/<agent>/tools.{sh,py}` (agents with a config.yaml).

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

from tuiapp.tools.formats import (
    loki_tool_choice,
    runtimes,  # the parsers: imported when declaring
)
from tuiapp.tools.formats.base import FormatContext, ToolFormat, ToolLoadError
from tuiapp.tools.formats.llm_functions import OUTPUT_FILE
from tuiapp.tools.formats.yaml_file import read_yaml
from tuiapp.tools.schema import schema_error
from tuiapp.vocab.tool_specs import Invocation, ToolSpec

SUFFIXES = (".py", ".ts", ".sh")
AGENT_FILES = ("tools.sh", "tools.py", "tools.js")  # the first one present is the agent's
PROMPT_UTILS = Path(__file__).resolve().parent / "loki_prompt_utils.sh"


def functions_dir(base: Path) -> Path:
    """A configured path may name the config dir, the functions dir or the tools dir itself."""
    if (base / "functions").is_dir():
        return base / "functions"
    if base.name == "tools" and not (base / "tools").is_dir():
        return base.parent
    return base


def tools_dir(base: Path) -> Path:
    for candidate in (base / "functions" / "tools", base / "tools"):
        if candidate.is_dir():
            return candidate
    return base


def tool_name(path: Path) -> str:
    return "_".join(t for t in re.split(r"[^a-z0-9]+", path.stem.lower()) if t)


def dotenv_files(path: Path) -> list[Path]:
    # Loki reads .env beside the tools; the functions dir's .env is honoured too.
    return [path.parent / ".env", path.parent.parent / ".env"]


def is_loki_agent(d: Path) -> bool:
    """A Loki agent dir: config.yaml (or a graph.yaml), and no llm-functions index.yaml."""
    return ((d / "config.yaml").is_file() or (d / "graph.yaml").is_file()) \
        and not (d / "index.yaml").is_file()


def visible_tools(tools: Path) -> set[str] | None:
    """Loki's `visible_tools` (file names) from the config dir's config.yaml, plus every tool an
    agent there lists in `global_tools`; None when config.yaml sets no visible_tools."""
    config_dir = tools.parent.parent
    listed = read_yaml(config_dir / "config.yaml").get("visible_tools")
    if not isinstance(listed, list):
        return None
    out = {str(x) for x in listed}
    agents = config_dir / "agents"
    try:
        dirs = sorted(agents.iterdir()) if agents.is_dir() else []
    except OSError:
        dirs = []
    for d in dirs:
        more = read_yaml(d / "config.yaml").get("global_tools")
        out.update(str(x) for x in more or [] if isinstance(more, list))
    return out


def var_env_name(name: str) -> str:
    return "LLM_AGENT_VAR_" + "".join(c if c.isalnum() else "_" for c in name).upper()


def agent_var_env_names(agent_dir: Path) -> set[str]:
    """LLM_AGENT_VAR_<NAME> of the variables config.yaml declares: the agent supplies them."""
    out = set()
    for v in read_yaml(agent_dir / "config.yaml").get("variables") or []:
        if isinstance(v, dict) and isinstance(v.get("name"), str):
            out.add(var_env_name(v["name"]))
    return out


class LokiFormat(ToolFormat):
    name = "loki"

    def roots(self, ctx: FormatContext) -> list[Path]:
        # The auto-detected roots are listed even before they exist, so hot reload sees them.
        out = [ctx.project_root / "functions" / "tools", ctx.project_root / "agents"]
        for src in ctx.config.tools.sources:
            if src.format == self.name:
                p = Path(src.path).expanduser()
                base = p if p.is_absolute() else ctx.project_root / p
                out.append(tools_dir(base))
                out.append(functions_dir(base).parent / "agents")
        return list(dict.fromkeys(out))

    def watch_recursive(self, root: Path) -> bool:
        return root.name == "agents"  # agents/<agent>/tools.*; the tools dir is flat

    def candidates(self, root: Path) -> Iterable[Path]:
        if root.name == "agents":
            try:
                dirs = sorted(p for p in root.iterdir() if p.is_dir() and is_loki_agent(p))
            except OSError:
                return []
            found = ([d / f for f in AGENT_FILES if (d / f).is_file()][:1] for d in dirs)
            return [p for files in found for p in files]
        try:
            names = sorted(os.listdir(root))
        except OSError:
            return []
        visible = visible_tools(root)
        return [root / n for n in names
                if n.endswith(SUFFIXES) and not n.startswith(".") and (root / n).is_file()
                and (visible is None or n in visible)]

    def cache_salt(self, path: Path, ctx: FormatContext) -> str:
        tools = ctx.config.tools
        # config.yaml: its enabled_tools / mapping_tools say whether a tool is offered.
        files = [*dotenv_files(path), path.parent.parent.parent / "config.yaml"]
        if path.parent.parent.name == "agents":
            files = [path.parent.parent.parent / ".env", path.parent / "config.yaml"]
        return runtimes.env_salt(ctx, files) + f"|{tools.python}|{tools.ts_runtime}"

    async def declare(self, path: Path, ctx: FormatContext) -> list[ToolSpec]:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            raise ToolLoadError(f"cannot read: {e.strerror}") from None
        path = path.absolute()  # it runs later with cwd = the project root
        if path.parent.parent.name == "agents":
            return self._agent(path, text, ctx)
        name = tool_name(path)
        if not name:
            raise ToolLoadError("the file name gives no tool name")
        from tuiapp.tools.formats import argc_tags, js_sig, python_sig

        runtime = self._runtime(path, ctx)
        run: dict[str, Any] = {"file": str(path), "runtime": runtime}
        if path.suffix == ".py":
            rules = python_sig.Rules(reject_variadic=True, require_docstring=True,
                                     whole_docstring=True)
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
            self._check(script, dotenv_files(path), set(), ctx)
            description, parameters = script.root.description, script.root.parameters()
            run.update(kind="bash", root_call=True, **argc_tags.run_data(script, script.root))
        if not description:
            raise ToolLoadError("no description: the docstring / JSDoc must say what the tool does")
        problem = schema_error(parameters)
        if problem:
            raise ToolLoadError(problem)
        on = loki_tool_choice.enabled(path.parent.parent.parent)  # tools/ → functions/ → config
        if on is not None and name not in on:
            run["agents_only"] = True  # not in enabled_tools: an agent's global_tools may use it
        return [ToolSpec(name, description, parameters, self.name, str(path), run=run)]

    def _agent(self, path: Path, text: str, ctx: FormatContext) -> list[ToolSpec]:
        """agents/<agent>/tools.{sh,py}: each public function (bash: each @cmd) is a tool."""
        from tuiapp.tools.formats import argc_tags, python_sig

        agent = path.parent.name
        base: dict[str, Any] = {"file": str(path), "agent": agent,
                                "config_dir": str(path.parent.parent.parent)}
        out: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = []
        if path.suffix == ".py":
            rules = python_sig.Rules(reject_variadic=True, whole_docstring=True)
            runtime = self._runtime(path, ctx)
            for f in python_sig.functions(text, rules):
                run = {**base, "kind": "python", "function": f.function, "runtime": runtime}
                out.append((f.function, f.description, f.parameters, run))
        elif path.suffix == ".sh":
            script = argc_tags.parse(text)
            self._check(script, [path.parent.parent.parent / ".env"],
                        agent_var_env_names(path.parent), ctx)
            runtime = self._runtime(path, ctx)
            for cmd in script.commands:
                if cmd.function.startswith("_"):
                    continue  # helpers and _instructions (run for dynamic instructions only)
                run = {**base, "kind": "bash", "root_call": False, "runtime": runtime,
                       **argc_tags.run_data(script, cmd)}
                out.append((cmd.name, cmd.description, cmd.parameters(), run))
        else:
            raise ToolLoadError(f"agent {agent}: {path.name}: Loki runs agent tools written in "
                                "bash or Python only")
        specs = []
        for name, description, parameters, run in out:
            if not description:
                raise ToolLoadError(f"{name}: no description (Loki requires one)")
            problem = schema_error(parameters)
            if problem:
                raise ToolLoadError(f"{name}: {problem}")
            specs.append(ToolSpec(name, description, parameters, self.name, str(path), run=run))
        return specs

    @staticmethod
    def _check(script: Any, dotenv: list[Path], given: set[str], ctx: FormatContext) -> None:
        from tuiapp.tools.formats import argc_tags

        values = runtimes.dotenv_values(*dotenv)
        env = runtimes.environ(ctx)
        argc_tags.check_requirements(
            script, lambda v: bool(v in given or env.get(v) or values.get(v)),
            lambda prog: runtimes.which(prog, ctx) is not None)

    def _runtime(self, path: Path, ctx: FormatContext) -> list[str]:
        """The interpreter argv: the #! line when there is one, else the language default."""
        argv = runtimes.shebang(path)
        if argv:
            missing = runtimes.missing_program(argv, ctx)
            if missing:  # the machine's doing, not the file's: never cached
                raise ToolLoadError(f"the #! interpreter `{missing}` is not installed",
                                    transient=True)
            return argv
        if path.suffix == ".py":
            return runtimes.python_argv(ctx)
        if path.suffix == ".ts":
            ts, why = runtimes.ts_runtime(ctx)
            if ts is None:
                raise ToolLoadError(why, transient=True)
            return ts
        return ["bash"]

    def invocation(self, spec: ToolSpec, arguments: dict[str, Any],
                   ctx: FormatContext) -> Invocation:
        """As Loki's run-tool / run-agent scripts set things up (LLM_ROOT_DIR, LLM_TOOL_NAME,
        LLM_TOOL_CACHE_DIR or LLM_AGENT_*, LLM_PROMPT_UTILS_FILE), plus LLM_TOOL_RAW_JSON."""
        run = spec.run
        path = Path(run["file"])
        data = json.dumps(arguments, ensure_ascii=False)
        agent = run.get("agent")
        if agent:
            root = Path(run["config_dir"])
            env = runtimes.unset_only(runtimes.dotenv_values(root / ".env"), ctx)
            env.update(LLM_ROOT_DIR=str(root), LLM_AGENT_NAME=agent,
                       LLM_AGENT_FUNC=run["function"],
                       LLM_AGENT_ROOT_DIR=str(root / "agents" / agent),
                       LLM_AGENT_CACHE_DIR=str(root / "cache" / agent))
        else:
            root = path.parent.parent  # <config dir>/functions: Loki's functions dir
            env = runtimes.unset_only(runtimes.dotenv_values(*dotenv_files(path)), ctx)
            env.update(LLM_ROOT_DIR=str(root), LLM_TOOL_NAME=spec.name,
                       LLM_TOOL_CACHE_DIR=str(root / "cache" / spec.name))
        env.update(LLM_PROMPT_UTILS_FILE=str(PROMPT_UTILS), LLM_TOOL_RAW_JSON=data)
        runtime = list(run["runtime"])
        if run["kind"] == "python":
            env.update(runtimes.python_env())
            argv = [*runtime, str(runtimes.CHILD_PYTHON), "call", str(path), run["function"]]
            return Invocation(argv, stdin=data.encode(), env=env, output_file=OUTPUT_FILE)
        if run["kind"] == "ts":
            names = json.dumps(run["arg_names"])
            argv = [*runtime, str(runtimes.CHILD_JS), str(path), "run", "positional", names]
            return Invocation(argv, stdin=data.encode(), env=env, output_file=OUTPUT_FILE)
        from tuiapp.tools.formats import argc_tags

        program = argc_tags.bash_program(run, arguments, is_root=run.get("root_call", True))
        return Invocation([*runtime, "-c", program, str(path)], env=env, output_file=OUTPUT_FILE)

    def result_text(self, spec: ToolSpec, stdout: str, output_file_text: str | None) -> str:
        return runtimes.text_result(stdout, output_file_text)
