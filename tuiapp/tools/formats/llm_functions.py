"""llm-functions / AIChat tools (FORMATS.md §2), run without `argc` or `jq`.

An llm-functions root holds `tools/*.{sh,py,js}`, `agents/<agent>/tools.{sh,py,js}` and, once
built, `functions.json` + `bin/`. Declarations are read from the sources as text (argc tags,
Python `ast`, JSDoc); a built `functions.json` is consumed as is for tools with no source here.
Calls run in a child: bash sources the script with a no-op `argc` and the `argc_*` variables
set, Python and JS through the child runners; the result is what the tool wrote to $LLM_OUTPUT.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# The parsers (argc_tags, python_sig, js_sig) are imported when a file is declared or run:
# the warm `kep functions` path only lists files and reads the cache.
from tuiapp.tools.formats import runtimes
from tuiapp.tools.formats.base import FormatContext, ToolFormat, ToolLoadError
from tuiapp.tools.schema import schema_error
from tuiapp.vocab.tool_specs import Invocation, ToolSpec

SOURCE_SUFFIXES = (".sh", ".py", ".js")
AGENT_SOURCE_ORDER = (".sh", ".js", ".py")  # LANG_CMDS in llm-functions' Argcfile


def llm_root(path: Path) -> Path:
    """The llm-functions root a candidate belongs to (LLM_ROOT_DIR)."""
    if path.name == "functions.json":
        return path.parent.parent.parent if path.parent.parent.name == "agents" else path.parent
    if path.parent.parent.name == "agents":  # agents/<agent>/tools.sh
        return path.parent.parent.parent
    return path.parent.parent  # tools/<tool>.sh


def expand_root(base: Path) -> list[Path]:
    """tools/, agents/ and functions.json of an llm-functions dir; a dir without any of them is
    taken as a tools dir itself."""
    parts = [base / "tools", base / "agents", base / "functions.json"]
    found = [p for p in parts if p.exists()]
    return found if found or not base.is_dir() else [base]


class LlmFunctionsFormat(ToolFormat):
    name = "llm-functions"

    def roots(self, ctx: FormatContext) -> list[Path]:
        # The project's own llm-functions places, existing or not (a tools/ made later is
        # picked up by hot reload); never the project root itself, whose top-level scripts
        # (setup.py, build.sh…) are not tools. Only a configured source may be a bare dir.
        root = ctx.project_root
        out = [root / "tools", root / "agents", root / "functions.json"]
        for src in ctx.config.tools.sources:
            if src.format == self.name:
                p = Path(src.path).expanduser()
                out += expand_root(p if p.is_absolute() else ctx.project_root / p)
        return list(dict.fromkeys(out))

    def watch_recursive(self, root: Path) -> bool:
        return root.name == "agents"  # agents/<agent>/tools.*; tools dirs are flat

    def candidates(self, root: Path) -> Iterable[Path]:
        if root.is_file():
            return [root] if root.name == "functions.json" else []
        if not root.is_dir():
            return []  # a project place that does not exist (yet)
        if root.name == "agents":
            out = []
            # An llm-functions agent has an index.yaml; other agents/ dirs are not ours.
            for agent in sorted(p for p in root.iterdir() if (p / "index.yaml").is_file()):
                # llm-functions' build takes the first of tools.sh, tools.js, tools.py
                sources = [agent / f"tools{s}" for s in AGENT_SOURCE_ORDER
                           if (agent / f"tools{s}").is_file()]
                built = agent / "functions.json"
                out += sources[:1] or ([built] if built.is_file() else [])
            return out
        try:
            names = sorted(os.listdir(root))
        except OSError:
            return []
        return [root / n for n in names if n.endswith(SOURCE_SUFFIXES)
                and not n.startswith(("_", ".")) and (root / n).is_file()]

    def cache_salt(self, path: Path, ctx: FormatContext) -> str:
        root = llm_root(path)
        files = [root / ".env"]
        if path.parent.parent.name == "agents":  # its variables satisfy `@env …!`
            files.append(path.parent / "index.yaml")
        salt = runtimes.env_salt(ctx, files)
        if path.name == "functions.json":  # which entries have a source, and the bin/ links
            salt += "|" + ",".join(sorted(_source_names(root)))
            salt += "|" + ",".join(sorted(_listing(root / "bin")))
        return salt + f"|compat={ctx.config.tools.llm_functions_compat}"

    async def declare(self, path: Path, ctx: FormatContext) -> list[ToolSpec]:
        path = path.absolute()  # it runs later with cwd = the project root
        root = llm_root(path)
        agent = path.parent.name if path.parent.parent.name == "agents" else None
        if path.name == "functions.json":
            return self._built(path, root, agent, ctx)
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            raise ToolLoadError(f"cannot read: {e.strerror}") from None
        if path.suffix == ".sh":
            return self._bash(path, text, root, agent, ctx)
        if path.suffix == ".py":
            return self._python(path, text, root, agent, ctx)
        return self._js(path, text, root, agent, ctx)

    # ---- declarations per language ---------------------------------------------------------

    def _spec(self, name: str, description: str, parameters: dict[str, Any], path: Path,
              run: dict[str, Any]) -> ToolSpec:
        problem = schema_error(parameters)
        if problem:
            raise ToolLoadError(f"{name}: {problem}")
        return ToolSpec(name, description, parameters, self.name, str(path), run=run)

    def _bash(self, path: Path, text: str, root: Path, agent: str | None,
              ctx: FormatContext) -> list[ToolSpec]:
        from tuiapp.tools.formats import argc_tags

        script = argc_tags.parse(text)
        if not script.has_tags:
            return []  # a helper script, not a tool
        dotenv = runtimes.dotenv_values(root / ".env")
        env = runtimes.environ(ctx)
        # An agent's own variables are given when the agent starts (--set, the form, a
        # default): they satisfy its tools' `@env LLM_AGENT_VAR_<NAME>!`.
        given = agent_var_env_names(root / "agents" / agent / "index.yaml") if agent else set()
        argc_tags.check_requirements(
            script, lambda v: bool(v in given or env.get(v) or dotenv.get(v)),
            lambda prog: runtimes.which(prog, ctx) is not None)
        base = {"kind": "bash", "file": str(path), "root": str(root)}
        if agent is None:
            if not script.root.description:
                raise ToolLoadError("no `# @describe` line: llm-functions would skip this tool")
            name = path.stem.replace("-", "_")
            run = {**base, **argc_tags.run_data(script, script.root), "root_call": True}
            return [self._spec(name, script.root.description, script.root.parameters(), path, run)]
        out = []
        for cmd in script.commands:
            if cmd.function.startswith("_") or not cmd.description:
                continue  # helpers, as the original's filter
            run = {**base, **argc_tags.run_data(script, cmd), "agent": agent, "root_call": False}
            out.append(self._spec(cmd.name, cmd.description, cmd.parameters(), path, run))
        return out

    def _python(self, path: Path, text: str, root: Path, agent: str | None,
                ctx: FormatContext) -> list[ToolSpec]:
        from tuiapp.tools.formats import python_sig

        rules = python_sig.Rules(defaults_optional=not ctx.config.tools.llm_functions_compat)
        fns = python_sig.functions(text, rules, only=None if agent else "run")
        run = {"kind": "python", "file": str(path), "root": str(root)}
        if agent is None:
            return [self._spec(path.stem, f.description, f.parameters, path,
                               {**run, "function": f.function}) for f in fns[:1]]
        return [self._spec(f.function, f.description, f.parameters, path,
                           {**run, "function": f.function, "agent": agent}) for f in fns]

    def _js(self, path: Path, text: str, root: Path, agent: str | None,
            ctx: FormatContext) -> list[ToolSpec]:
        from tuiapp.tools.formats import js_sig

        fns = js_sig.llm_functions_js(text, agent is not None,
                                      lowercase_enums=ctx.config.tools.llm_functions_compat)
        if not fns and agent is None and re.search(r"^\s*(export\s+)?(async\s+)?function\s+run\b"
                                                   r"|^\s*(module\.)?exports\.run\s*=", text, re.M):
            raise ToolLoadError("`run` has no JSDoc comment (/** … @property … */) above it")
        if fns and runtimes.which("node", ctx) is None:
            raise ToolLoadError("JavaScript tools need Node.js: node is not on PATH",
                                transient=True)
        run = {"kind": "js", "file": str(path), "root": str(root)}
        if agent is None:
            return [self._spec(path.stem, f.description, f.parameters, path,
                               {**run, "function": f.function}) for f in fns[:1]]
        return [self._spec(f.function, f.description, f.parameters, path,
                           {**run, "function": f.function, "agent": agent}) for f in fns]

    def _built(self, path: Path, root: Path, agent: str | None,
               ctx: FormatContext) -> list[ToolSpec]:
        """AIChat's functions_dir: declarations as built, run through bin/ (as AIChat does)."""
        try:
            items = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ToolLoadError(f"cannot read functions.json: {e}") from None
        if not isinstance(items, list):
            raise ToolLoadError("functions.json must be a JSON array of declarations")
        bin_dir = root / "bin"
        if not bin_dir.is_dir():
            raise ToolLoadError(f"functions.json without {bin_dir}: build it (`argc build`)")
        have_source = _source_names(root) if agent is None else set()
        out = []
        for i, item in enumerate(items, 1):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise ToolLoadError(f"functions.json item {i} has no name")
            name = item["name"]
            if name in have_source:
                continue  # the source file declares it (and runs without argc)
            run: dict[str, Any] = {"kind": "bin", "root": str(root),
                                   "bin": str(bin_dir / (agent or name))}
            if agent:
                run.update(agent=agent, function=name)
            if item.get("mcp"):
                run["mcp"] = item["mcp"]
            params = item.get("parameters") or {"type": "object", "properties": {}}
            out.append(self._spec(name, str(item.get("description", "")), params, path, run))
        return out

    # ---- calls ------------------------------------------------------------------------------

    def invocation(self, spec: ToolSpec, arguments: dict[str, Any],
                   ctx: FormatContext) -> Invocation:
        run = spec.run
        root = Path(run["root"])
        env = runtimes.unset_only(runtimes.dotenv_values(root / ".env"), ctx)
        env["LLM_ROOT_DIR"] = str(root)
        agent = run.get("agent")
        if agent:
            env.update(_agent_env(root, agent, run.get("function", spec.name), ctx))
        else:
            env.update(LLM_TOOL_NAME=spec.name, LLM_TOOL_CACHE_DIR=str(root / "cache" / spec.name))
        data = json.dumps(arguments, ensure_ascii=False)
        kind = run["kind"]
        if kind == "bash":
            from tuiapp.tools.formats import argc_tags

            program = argc_tags.bash_program(run, arguments, is_root=run.get("root_call", True))
            argv = ["bash", "-c", program, run["file"]]
            return Invocation(argv, env=env, output_file=OUTPUT_FILE)
        if kind == "python":
            env.update(runtimes.python_env())
            argv = [*runtimes.python_argv(ctx), str(runtimes.CHILD_PYTHON), "call", run["file"],
                    run["function"]]
            return Invocation(argv, stdin=data.encode(), env=env, output_file=OUTPUT_FILE)
        if kind == "js":
            argv = ["node", str(runtimes.CHILD_JS), run["file"], run["function"], "object"]
            return Invocation(argv, stdin=data.encode(), env=env, output_file=OUTPUT_FILE)
        # bin/<tool> '<json>' or bin/<agent> <func> '<json>', as AIChat runs them
        argv = [run["bin"], run["function"], data] if agent else [run["bin"], data]
        return Invocation(argv, env=env, output_file=OUTPUT_FILE)

    def result_text(self, spec: ToolSpec, stdout: str, output_file_text: str | None) -> str:
        return runtimes.text_result(stdout, output_file_text)


# The runner replaces this placeholder with a fresh temp file and exports it as $LLM_OUTPUT.
OUTPUT_FILE = Path("LLM_OUTPUT")


def _agent_env(root: Path, agent: str, func: str, ctx: FormatContext) -> dict[str, str]:
    env = {
        "LLM_AGENT_NAME": agent,
        "LLM_AGENT_FUNC": func,
        "LLM_AGENT_ROOT_DIR": str(root / "agents" / agent),
        "LLM_AGENT_CACHE_DIR": str(root / "cache" / agent),
    }
    # index.yaml variable defaults, unless the user (or `kep --agent … --set`) already set them
    have = runtimes.environ(ctx)
    for var in _agent_variables(root / "agents" / agent / "index.yaml"):
        key = "LLM_AGENT_VAR_" + "".join(c if c.isalnum() else "_" for c in var["name"]).upper()
        if key not in have and var.get("default") is not None:
            env[key] = str(var["default"])
    return env


def agent_var_env_names(index: Path) -> set[str]:
    """LLM_AGENT_VAR_<NAME> of every variable an agent file declares."""
    return {"LLM_AGENT_VAR_" + "".join(c if c.isalnum() else "_" for c in v["name"]).upper()
            for v in _agent_variables(index)}


def _agent_variables(index: Path) -> list[dict[str, Any]]:
    try:
        import yaml

        data = yaml.safe_load(index.read_text(encoding="utf-8")) or {}
    except (OSError, ValueError, ImportError):
        return []
    except Exception:  # yaml.YAMLError: a broken index.yaml must not break the call
        return []
    variables = data.get("variables") if isinstance(data, dict) else None
    return [v for v in variables or [] if isinstance(v, dict) and isinstance(v.get("name"), str)]


def _source_names(root: Path) -> set[str]:
    names = set()
    for p in _listing(root / "tools"):
        stem, dot, suffix = p.rpartition(".")
        if dot and f".{suffix}" in SOURCE_SUFFIXES and not p.startswith(("_", ".")):
            names.add(stem)
            names.add(stem.replace("-", "_"))
    return names


def _listing(d: Path) -> list[str]:
    try:
        return os.listdir(d)
    except OSError:
        return []
