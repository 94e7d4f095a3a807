"""JSON-schema checks for tool definitions and call arguments (jsonschema, lazily imported)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _validator_cls() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator


def schema_error(parameters: Any) -> str | None:
    """Why `parameters` is not a usable JSON-schema object, or None."""
    if not isinstance(parameters, dict):
        return f"parameters must be a JSON object, got {type(parameters).__name__}"
    if parameters.get("type", "object") != "object":
        return f'parameters.type must be "object", got {parameters.get("type")!r}'
    from tuiapp.tools.schema_quick import plainly_valid
    from tuiapp.tools.schema_refs import ref_problem

    if plainly_valid(parameters):  # the common case, proved without importing jsonschema
        problem = ref_problem(parameters)
        return f"unusable schema: {problem}" if problem else None
    from jsonschema.exceptions import SchemaError

    try:
        _validator_cls().check_schema(parameters)
    except SchemaError as e:
        where = "/".join(str(p) for p in e.absolute_path) or "parameters"
        return f"invalid schema at {where}: {e.message}"
    except RecursionError:
        return "invalid schema: nested too deeply"
    problem = ref_problem(parameters)
    return f"unusable schema: {problem}" if problem else None


def arguments_error(parameters: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Why `arguments` does not satisfy `parameters`, or None. Lists every problem, briefly."""
    validator = _validator_cls()(parameters)
    problems = []
    try:
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    except RecursionError:
        return "the tool's schema cannot be checked (it refers to itself in a loop)"
    except Exception as e:  # an unresolvable $ref and the like: the schema's fault, not a crash
        return f"the tool's schema cannot be checked ({type(e).__name__}: {e})"[:400]
    for err in errors:
        where = "/".join(str(p) for p in err.absolute_path)
        problems.append(f"{where}: {err.message}" if where else err.message)
    return "; ".join(problems[:5]) if problems else None
