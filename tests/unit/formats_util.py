"""Helpers for the tool-format tests: copy a fixture tree, declare its files, run one call
through the real Runner (subprocess, $LLM_OUTPUT, result_text) and read what the model gets."""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuiapp.settings import config, config_types
from tuiapp.tools.formats.base import FormatContext, ToolFormat, ToolLoadError
from tuiapp.tools.proc import run_collect
from tuiapp.tools.runner import Runner
from tuiapp.vocab.events import Event
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def copy_fixture(name: str, dest: Path) -> Path:
    """A private copy of tests/fixtures/<name> (modes kept), so tests may edit it."""
    root = dest / name
    shutil.copytree(FIXTURES / name, root, symlinks=True)
    return root


def make_config(root: Path, tools: dict[str, Any] | None = None, **top: Any) -> config_types.Config:
    data: dict[str, Any] = {"tools": {"python": sys.executable, **(tools or {})}, **top}
    return config.parse(data, "test", root)


def make_ctx(root: Path, tools: dict[str, Any] | None = None,
             env: dict[str, str] | None = None) -> FormatContext:
    return FormatContext(root, make_config(root, tools), run_collect,
                         env if env is not None else os.environ.copy())


async def declare_all(fmt: ToolFormat, ctx: FormatContext) -> dict[str, list[ToolSpec] | str]:
    """root-relative path → its specs, or its ToolLoadError text."""
    out: dict[str, list[ToolSpec] | str] = {}
    for root in fmt.roots(ctx):
        for path in fmt.candidates(root):
            rel = str(path.relative_to(ctx.project_root)) if path.is_relative_to(
                ctx.project_root) else str(path)
            try:
                out[rel] = await fmt.declare(path, ctx)
            except ToolLoadError as e:
                out[rel] = f"BROKEN: {e}"
    return out


def declarations(found: dict[str, list[ToolSpec] | str]) -> dict[str, Any]:
    """The golden view: name → {description, parameters}; broken files → their error."""
    out: dict[str, Any] = {}
    for rel, specs in found.items():
        if isinstance(specs, str):
            out[rel] = specs
        else:
            for s in specs:
                out[s.name] = {"description": s.description, "parameters": s.parameters}
    return out


def golden(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


@dataclass
class Ran:
    status: str
    exit_code: int | None
    result: str  # what the model gets
    events: list[Event]

    def output(self, stream: str = "stdout") -> str:
        return "".join(e.text for e in self.events  # type: ignore[attr-defined]
                       if type(e).__name__ == "ToolOutput" and e.stream == stream)


async def run_call(fmt: ToolFormat, spec: ToolSpec, arguments: dict[str, Any],
                   root: Path, cfg: config_types.Config | None = None) -> Ran:
    cfg = cfg or make_config(root)
    runner = Runner(cfg, spool_dir=root / ".spool", formats=[fmt])
    events: list[Event] = []
    outcome = await runner.run(spec, ToolCall("call-1", spec.name, arguments), events.append)
    fin = outcome.finished
    return Ran(fin.status, fin.exit_code, fin.result, events)


def by_name(found: dict[str, list[ToolSpec] | str]) -> dict[str, ToolSpec]:
    return {s.name: s for specs in found.values() if not isinstance(specs, str) for s in specs}
