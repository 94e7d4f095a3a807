"""Declaring Python-module formats (extension packs, AITool classes): the module is imported by
_child_python.py in a child process and its answer read as JSON. One file failing (a missing
package, a crash at import, a hang) becomes that file's ToolLoadError and nothing else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tuiapp.tools.formats import runtimes
from tuiapp.tools.formats.base import FormatContext, ToolLoadError


async def describe(mode: str, path: Path, ctx: FormatContext,
                   extra_env: dict[str, str] | None = None) -> Any:
    timeout = ctx.config.tools.list_timeout
    argv = [*runtimes.python_argv(ctx), str(runtimes.CHILD_PYTHON), mode, str(path.absolute())]
    try:
        res = await ctx.lister(argv, timeout=timeout, cwd=ctx.project_root,
                               env={**runtimes.environ(ctx), **runtimes.python_env(),
                                    **(extra_env or {})})
    except OSError as e:
        raise ToolLoadError(f"cannot start {argv[0]}: {e.strerror or e}", transient=True) from None
    if res.timed_out:
        raise ToolLoadError(f"importing it took more than {timeout:g} s (killed); a module "
                            "should not do slow work at import time", transient=True)
    err = res.stderr.decode("utf-8", "replace").strip()
    if res.exit_code == 2 and err:
        raise ToolLoadError(err.splitlines()[-1])
    if res.exit_code != 0:
        last = err.splitlines()[-1] if err else "nothing on stderr"
        raise ToolLoadError(f"describing it failed (exit {res.exit_code}): {last}")
    try:
        return json.loads(res.stdout.decode("utf-8", "replace"))
    except ValueError:
        raise ToolLoadError("the module printed to stdout while being imported; "
                            "kep could not read its description") from None
