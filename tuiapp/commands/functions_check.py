"""`kep functions --check [--json] [--strict]`: the protocol checklist, printed.

Exit status: 0 clean, 1 warnings with --strict, 2 errors (infos never fail).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from tuiapp.commands._common import show_source
from tuiapp.tools.check import Finding, check_entries, counts, exit_status
from tuiapp.tools.registry import Registry
from tuiapp.vocab.tool_specs import BrokenTool, ToolSpec


def run_check(registry: Registry, entries: Sequence[ToolSpec | BrokenTool], *,
              as_json: bool, strict: bool) -> int:
    findings = asyncio.run(check_entries(entries, registry.context(),
                                         approval=registry.config.approval))
    status = exit_status(findings, strict=strict)
    if as_json:
        json.dump({"findings": [f.to_json() for f in findings], "counts": counts(findings),
                   "exit_status": status}, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return status
    print_findings(findings, registry.config.project_root)
    return status


def _shown(text: str) -> str:
    """Text from a tool (its names, its stderr) with control characters made visible: a
    check must not let a tool drive the terminal."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def print_findings(findings: Sequence[Finding], root: Path) -> None:
    if not findings:
        print("All checks passed.")
        return
    source = None
    for f in findings:
        if f.source != source:
            source = f.source
            print(_shown(show_source(f.source, root)))
        print(f"  {f.severity:<7}  {f.code}: {_shown(f.message)}")
        if f.fix:
            print(f"           fix: {_shown(f.fix)}")
    n = counts(findings)
    print(f"\n{n['error']} error(s), {n['warning']} warning(s), {n['info']} info")
