"""Child-side runner for the Python tool formats. Runs in the TOOL's interpreter, never in kep.

    python _child_python.py call         FILE FUNC        < args.json   (llm-functions, Loki)
    python _child_python.py ext-describe FILE                            (extension packs)
    python _child_python.py ext-call     FILE FUNC        < args.json
    python _child_python.py ait-describe FILE                            (AITool classes)
    python _child_python.py ait-call     FILE CLASS       < args.json

Standalone on purpose: it imports only the standard library (plus jsonschema and pydantic when
the tool's environment has them), so any Python 3.8+ can run it by path. User code is imported
here, in the child, so a crash, a hang or a missing package never reaches kep.
Exit codes: 0 ok, 1 the tool failed (message on stderr), 2 the file cannot provide tools.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import json
import os
import sys
import traceback
import typing
from pathlib import Path

# `python path/to/_child_python.py` puts this package directory first on sys.path, where our own
# modules (base.py, …) would shadow the user's: drop it.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    sys.path.pop(0)


class Unusable(Exception):
    """The file cannot provide tools (exit 2, one line on stderr)."""


# ---- loading ---------------------------------------------------------------------------------

def load(file: str, package_aware: bool) -> typing.Any:
    """Import FILE. Inside a package (an __init__.py beside it) it is imported by its dotted
    name so relative imports work; else by path under its stem. Either way the module is in
    sys.modules before its code runs (pydantic and `from __future__ import annotations` need it).
    """
    path = Path(file).resolve()
    for extra in (os.getcwd(), str(path.parent)):
        if extra not in sys.path:
            sys.path.insert(0, extra)
    if package_aware and (path.parent / "__init__.py").exists():
        parts = [path.stem]
        top = path.parent
        while (top / "__init__.py").exists():
            parts.insert(0, top.name)
            top = top.parent
        sys.path.insert(0, str(top))
        return importlib.import_module(".".join(parts))
    name = path.stem if path.stem not in sys.modules else f"_kep_{abs(hash(str(path)))}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, str(path))
    if spec is None or spec.loader is None:
        raise Unusable(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def import_or_unusable(file: str, package_aware: bool) -> typing.Any:
    try:
        return load(file, package_aware)
    except Unusable:
        raise
    except BaseException as e:  # SystemExit from a module counts as a failed import too
        tb = traceback.extract_tb(e.__traceback__)
        where = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(tb)
                      if Path(f.filename).resolve() == Path(file).resolve()), "")
        at = f" (at {where})" if where else ""
        raise Unusable(f"import failed{at}: {type(e).__name__}: {e}") from None


def read_args() -> dict:
    raw = sys.stdin.read() if not sys.stdin.closed else ""
    args = json.loads(raw) if raw.strip() else {}
    if not isinstance(args, dict):
        raise Unusable("arguments must be a JSON object")
    return args


def settle(value: typing.Any) -> typing.Any:
    return asyncio.run(value) if inspect.isawaitable(value) else value


# ---- llm-functions / Loki -----------------------------------------------------------------

def call(file: str, func: str) -> int:
    module = import_or_unusable(file, package_aware=False)
    fn = getattr(module, func, None)
    if not callable(fn):
        raise Unusable(f"{Path(file).name} has no function {func}()")
    value = settle(fn(**read_args()))
    # As llm-functions' run-tool.py: scalars as text, dict/list as JSON, None: nothing.
    if value is None:
        return 0
    if isinstance(value, (dict, list)):
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    else:
        text = str(value)
    target = os.environ.get("LLM_OUTPUT")
    if target:
        with open(target, "a", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


# ---- schemas from live signatures (extensions) --------------------------------------------

def _load_schema_module() -> typing.Any:
    import importlib.util

    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_child_schema.py")
    spec = importlib.util.spec_from_file_location("_kep_child_schema", here)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def signature_schema(fn: typing.Any) -> dict:
    return _load_schema_module().signature_schema(fn)


def doc_parts(fn: typing.Any) -> tuple[str, str, str]:
    """(full docstring, summary = line 1, example = first non-empty line after it)."""
    doc = (inspect.getdoc(fn) or "").strip()  # as luna describes a tool
    lines = doc.splitlines()
    summary = lines[0].strip() if lines else ""
    example = next((line.strip() for line in lines[1:] if line.strip()), "")
    return doc, summary, example


def normalise(value: typing.Any) -> str:
    """FORMATS.md §4: pydantic model → JSON of model_dump(); dict/list → JSON; else str()."""
    def default(o: typing.Any) -> typing.Any:
        if hasattr(o, "model_dump"):
            return o.model_dump()
        return str(o)

    if hasattr(value, "model_dump") and callable(value.model_dump):
        return json.dumps(value.model_dump(), default=default, ensure_ascii=False)
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=default, ensure_ascii=False)
    return str(value)


# ---- extension packs ----------------------------------------------------------------------

def ext_module(file: str) -> typing.Any:
    module = import_or_unusable(file, package_aware=True)
    missing = [n for n in ("NAME", "SYSTEM_PROMPT", "TOOLS") if not hasattr(module, n)]
    if missing:
        raise Unusable(f"not an extension pack: no {', '.join(missing)} (needs NAME, "
                       "SYSTEM_PROMPT and TOOLS)")
    if not isinstance(module.NAME, str) or not isinstance(module.SYSTEM_PROMPT, str):
        raise Unusable("NAME and SYSTEM_PROMPT must be strings")
    if not isinstance(module.TOOLS, (list, tuple)) or not all(callable(t) for t in module.TOOLS):
        raise Unusable("TOOLS must be a list of functions")
    return module


def ext_describe(file: str) -> int:
    module = ext_module(file)
    tools = []
    for fn in module.TOOLS:
        doc, summary, example = doc_parts(fn)
        try:
            schema = signature_schema(fn)
        except (TypeError, ValueError) as e:
            raise Unusable(f"{getattr(fn, '__name__', fn)!r}: no usable signature: {e}") from None
        tools.append({"name": fn.__name__, "doc": doc, "summary": summary, "example": example,
                      "parameters": schema})
    json.dump({"name": module.NAME, "system_prompt": module.SYSTEM_PROMPT, "tools": tools},
              sys.stdout)
    return 0


def coerce_models(fn: typing.Any, args: dict) -> dict:
    """Arguments for parameters whose hint holds a pydantic model (`Model`, `list[Model]`,
    `Model | None` …) are validated into those models, as the pack's host does."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        return args
    out = dict(args)
    for name, value in args.items():
        tp = hints.get(name)
        if tp is None or not _has_model(tp):
            continue
        import pydantic

        out[name] = pydantic.TypeAdapter(tp).validate_python(value)
    return out


def _has_model(tp: typing.Any) -> bool:
    return hasattr(tp, "model_validate") or any(_has_model(a) for a in typing.get_args(tp))


def ext_call(file: str, func: str) -> int:
    module = ext_module(file)
    fn = next((t for t in module.TOOLS if getattr(t, "__name__", None) == func), None)
    if fn is None:
        raise Unusable(f"{module.NAME}: no tool {func} in TOOLS")
    value = settle(fn(**coerce_models(fn, read_args())))
    sys.stdout.write(normalise(value))
    return 0


# ---- AITool classes -----------------------------------------------------------------------

AITOOL_ATTRS = ("name", "description", "parameters_schema", "execute")


def is_aitool_class(obj: typing.Any, module: typing.Any) -> bool:
    return (inspect.isclass(obj) and obj.__module__ == module.__name__
            and not inspect.isabstract(obj)
            and all(hasattr(obj, a) for a in AITOOL_ATTRS) and callable(obj.execute))


def ait_host() -> dict:
    """The source's set-up hook and constructor arguments (KEP_AITOOL_HOST); the hook runs
    here, once, before any class is built."""
    try:
        host = json.loads(os.environ.get("KEP_AITOOL_HOST") or "{}")
    except ValueError:
        host = {}
    setup = host.get("setup")
    if setup:
        if host.get("root") and host["root"] not in sys.path:
            sys.path.insert(0, host["root"])
        try:
            resolve_callable(setup)(**(host.get("setup_args") or {}))
        except Exception as e:
            raise Unusable(f"setup {setup} failed: {type(e).__name__}: {e}") from None
    return host


def resolve_callable(spec: str) -> typing.Any:
    """"module:attr.attr" → that object (a function, a class, a classmethod)."""
    import importlib

    module_name, _, func = spec.partition(":")
    target: typing.Any = importlib.import_module(module_name)
    for part in func.split("."):
        target = getattr(target, part)
    return target


def built(value: typing.Any) -> typing.Any:
    """A constructor argument from `init.Class`: `{ call = "module:function", args = {…} }`
    is what that callable returns (an object the host builds, e.g. a PathManager); any
    other value is itself."""
    if isinstance(value, dict) and "call" in value and set(value) <= {"call", "args"}:
        args = {k: built(v) for k, v in (value.get("args") or {}).items()}
        return resolve_callable(str(value["call"]))(**args)
    return value


def ait_instances(file: str) -> list:
    host = ait_host()
    module = import_or_unusable(file, package_aware=True)
    init = host.get("init") or {}
    out = []
    for cls_name, cls in sorted(vars(module).items()):
        if not is_aitool_class(cls, module):
            continue
        kwargs = init.get(cls_name) or {}
        try:
            out.append((cls_name, cls(**{k: built(v) for k, v in kwargs.items()})))
        except Exception as e:
            raise Unusable(_build_error(cls_name, cls, kwargs, e, host)) from None
    return out


def _build_error(cls_name: str, cls: typing.Any, kwargs: dict, e: Exception, host: dict) -> str:
    """Why a class could not be built, and the setting that would give it what it needs."""
    try:
        params = inspect.signature(cls).parameters.values()
        missing = [p.name for p in params if p.default is p.empty and p.name not in kwargs
                   and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    except (TypeError, ValueError):
        missing = []
    if missing and isinstance(e, TypeError):
        example = ", ".join(f"{m} = …" for m in missing)
        return (f"{cls_name}() needs constructor argument(s) {', '.join(missing)}: give them "
                f"in its [[tools.sources]] entry as init.{cls_name} = {{ {example} }} "
                "(an object as { call = \"module:function\" })")
    hint = ("" if host.get("setup") else "; if the host application prepares something first "
            "(a singleton, a config), name it in [[tools.sources]] as setup = \"module:function\"")
    return f"{cls_name}() failed: {type(e).__name__}: {e}{hint}"


def ait_definition(tool: typing.Any) -> dict:
    fn = getattr(tool, "get_openrouter_tool_definition", None)
    if callable(fn):
        try:
            d = fn()
            if isinstance(d, dict) and isinstance(d.get("function"), dict):
                return d["function"]
        except Exception:
            pass  # an abstract stub or a broken override: the properties say the same
    return {"name": tool.name, "description": tool.description,
            "parameters": tool.parameters_schema}


def ait_describe(file: str) -> int:
    tools = []
    for cls_name, tool in ait_instances(file):
        d = ait_definition(tool)
        instructions = ""
        get = getattr(tool, "get_ai_prompt_instructions", None)
        if callable(get):
            try:
                instructions = get() or ""
            except Exception as e:
                raise Unusable(f"{cls_name}.get_ai_prompt_instructions() failed: {e}") from None
        tools.append({"class": cls_name, "name": d.get("name"), "description": d.get("description"),
                      "parameters": d.get("parameters"), "instructions": str(instructions),
                      "category": getattr(tool, "category", None),
                      "tags": list(getattr(tool, "tags", None) or [])})
    json.dump(tools, sys.stdout, default=str)
    return 0


def validate(schema: dict, args: dict) -> str | None:
    try:
        import jsonschema
    except ImportError:  # the tool's environment lacks it: at least check required names
        missing = [k for k in schema.get("required", []) if k not in args]
        return f"missing required argument(s): {', '.join(missing)}" if missing else None
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(args), key=str)
    return "; ".join(e.message for e in errors[:5]) or None


def ait_call(file: str, cls_name: str) -> int:
    tool = dict(ait_instances(file)).get(cls_name)
    if tool is None:
        raise Unusable(f"no AITool class {cls_name} in {Path(file).name}")
    args = read_args()
    schema = ait_definition(tool).get("parameters") or {"type": "object"}
    problem = validate(schema, args)
    if problem:
        print(f"invalid arguments: {problem}", file=sys.stderr)
        return 1
    params = inspect.signature(tool.execute).parameters
    wants_dict = "arguments" in params and "arguments" not in schema.get("properties", {})
    value = settle(tool.execute(arguments=args) if wants_dict else tool.execute(**args))
    error = _error_of(value)
    if error is not None:
        print(error, file=sys.stderr)
        return 1
    sys.stdout.write(normalise(value))
    return 0


def _error_of(value: typing.Any) -> str | None:
    """AITool's expected failures come back as {"error": "…"} (a dict, or its JSON text)."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, dict) and value.get("error"):
        err = value["error"]
        return err if isinstance(err, str) else json.dumps(err, default=str)
    return None


MODES = {"call": call, "ext-describe": ext_describe, "ext-call": ext_call,
         "ait-describe": ait_describe, "ait-call": ait_call}


def main(argv: list) -> int:
    if len(argv) < 2 or argv[0] not in MODES:
        print(f"usage: _child_python.py {{{','.join(MODES)}}} FILE [NAME]", file=sys.stderr)
        return 2
    try:
        return MODES[argv[0]](*argv[1:])
    except Unusable as e:
        print(str(e), file=sys.stderr)
        return 2
    except SystemExit as e:  # the tool called sys.exit(): keep its code
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
