"""Shared code of kep's built-in functions (files, shell, web). Stdlib only.

Not a tool itself: no #! line and no exec bit, so neither kep nor keprompt lists it. The
executables beside it import it; `kep init` copies it along with them.

The keprompt protocol: `EXE --list-functions` prints the definitions, `EXE --version` the
version, `EXE NAME` reads JSON arguments on stdin and prints the result; errors go to stderr
with a non-zero exit. cwd is the project root.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

VERSION = "kep built-in functions 0.1.0"
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)


class ToolError(Exception):
    """An expected failure: printed as `Error: …` on stderr, exit code 1."""


def project_root() -> Path:
    return Path(os.getcwd()).resolve()


def outside_allowed() -> bool:
    return os.environ.get("KEP_ALLOW_OUTSIDE_ROOT") == "1"


def safe_path(name: str) -> Path:
    """`name` resolved against the project root, refused if it lands outside it (after
    following every symlink), unless KEP_ALLOW_OUTSIDE_ROOT=1."""
    if not isinstance(name, str) or not name:
        raise ToolError("a path is required")
    if "\0" in name:
        raise ToolError("a path cannot contain NUL")
    root = project_root()
    resolved = Path(os.path.realpath(root / name))  # absolute `name` replaces root
    if not outside_allowed() and resolved != root and root not in resolved.parents:
        raise ToolError(
            f"{name!r} resolves to {resolved}, outside the project root {root}; "
            "set [tools] allow_outside_root = true in kep.toml to allow it"
        )
    return resolved


def shown(path: Path) -> str:
    """A path as the model should reuse it: relative to the project root when inside."""
    root = project_root()
    try:
        rel = path.relative_to(root)
    except ValueError:
        return str(path)
    return str(rel) if str(rel) != "." else "."


def walk_files(start: Path) -> Any:
    """Files under `start` (or `start` itself), sorted, skipping VCS and cache dirs."""
    if start.is_file():
        yield start
        return
    for dirpath, dirnames, filenames in os.walk(start):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for f in sorted(filenames):
            yield Path(dirpath) / f


def is_binary(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return b"\0" in f.read(8192)
    except OSError:
        return True


Function = tuple[Callable[..., str], dict[str, Any]]


def serve(functions: dict[str, Function]) -> int:
    """The protocol's command line for one executable."""
    args = sys.argv[1:]
    if not args:
        print(
            f"usage: {Path(sys.argv[0]).name} --list-functions | --version | FUNCTION < ARGS.json",
            file=sys.stderr,
        )
        return 2
    if args[0] == "--list-functions":
        print(json.dumps([d for _, d in functions.values()], indent=1))
        return 0
    if args[0] == "--version":
        print(VERSION)
        return 0
    entry = functions.get(args[0])
    if entry is None:
        print(
            f"Error: unknown function {args[0]!r}; this file has: {', '.join(functions)}",
            file=sys.stderr,
        )
        return 2
    try:
        raw = sys.stdin.read()
        arguments = json.loads(raw) if raw.strip() else {}
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        print(f"Error: arguments on stdin are not valid JSON: {e}", file=sys.stderr)
        return 2
    if not isinstance(arguments, dict):
        print("Error: arguments must be a JSON object", file=sys.stderr)
        return 2
    fn, definition = entry
    known = definition["parameters"].get("properties", {})
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        print(
            f"Error: unknown argument(s) {', '.join(unknown)}; expected: {', '.join(known)}",
            file=sys.stderr,
        )
        return 2
    try:
        result = fn(**arguments)
    except ToolError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    except TypeError as e:  # a required argument is missing
        print(f"Error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        where = f": {e.filename}" if e.filename else ""
        print(f"Error: {e.strerror or e}{where}", file=sys.stderr)
        return 1
    sys.stdout.write(result if result.endswith("\n") else result + "\n")
    return 0


def definition(
    name: str, description: str, properties: dict[str, Any], required: list[str]
) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        },
    }
