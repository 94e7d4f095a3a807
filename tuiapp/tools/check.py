"""The protocol check (`kep functions --check`, the functions panel's badge and list).

Only sources the registry listed are checked: the registry's discovery is where the project's
own code is gated (folder trust), so a source it did not list is never run here. kep's
built-ins are not checked (kep's own tests do that).

For a keprompt executable the check runs the tool itself, each probe in its own process group
with a timeout, stdin fed or closed, cwd = the project root as every real call:
  EXE --list-functions        (cwd = project root)  → JSON array, timed (slow listing)
  EXE --list-functions        (cwd = the tool's own folder)  → the relative-path probe
  EXE --version               → optional (info)
  EXE <unknown name>          → must exit non-zero with a message on stderr
  EXE <first function>  stdin "{not json"  → must exit non-zero

The probes that call a function (an unknown name, the first function with bad input) are
calls: a deny rule for them (policy.decide_direct, as for `kep call`) skips the probe.

The relative-path probe is differential, never a guess from the source text: a tool whose
listing fails (or differs) from the project root but works from its own folder opens files
relative to that folder, and will fail when kep runs it.
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from tuiapp.security import policy
from tuiapp.settings import paths
from tuiapp.settings.config_types import ApprovalConfig
from tuiapp.tools.formats.base import FormatContext, ProcResult, ToolLoadError
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import BrokenTool, ToolSpec

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
SLOW_LISTING_S = 0.5
PROBE_TIMEOUT_S = 10.0
UNKNOWN_NAME = "kep_check_no_such_function"
MALFORMED_STDIN = b'{"this is": not json'
PARALLEL = 4  # files probed at once (each probe is a process)


@dataclass(frozen=True)
class Finding:
    severity: Severity
    code: str  # stable, for --json and tests: "not-executable", "no-shebang", …
    source: str
    tool: str | None
    message: str
    fix: str  # one line

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def exit_status(findings: Sequence[Finding], *, strict: bool) -> int:
    """0 clean, 1 warnings with --strict, 2 errors (infos never fail)."""
    if any(f.severity == "error" for f in findings):
        return 2
    if strict and any(f.severity == "warning" for f in findings):
        return 1
    return 0


def counts(findings: Iterable[Finding]) -> dict[Severity, int]:
    out: dict[Severity, int] = dict.fromkeys(SEVERITIES, 0)
    for f in findings:
        out[f.severity] += 1
    return out


def _is_builtin(source: str) -> bool:
    try:
        return Path(source).is_relative_to(paths.builtin_functions_dir())
    except (ValueError, OSError):
        return False


# ---- declarations: every format ----------------------------------------------------------


def spec_findings(spec: ToolSpec, *, keprompt: bool) -> list[Finding]:
    """Description and schema rules that need no process: they read the declaration."""
    out: list[Finding] = []

    def add(sev: Severity, code: str, msg: str, fix: str) -> None:
        out.append(Finding(sev, code, spec.source, spec.name, msg, fix))

    words = spec.description.split()
    if not words:
        add("warning", "no-description", f"{spec.name} has no description",
            "say in a sentence what it does and when the model should call it")
    elif len(words) == 1:
        add("warning", "one-word-description",
            f"{spec.name}'s description is one word: {words[0][:60]!r}",
            "say in a sentence what it does and when the model should call it")
    params = spec.parameters if isinstance(spec.parameters, dict) else {}
    props = params.get("properties") or {}
    # Extension packs' schemas come from a bare signature: the format has no place for a
    # parameter's description, so asking for one would be a finding nobody can fix.
    if isinstance(props, dict) and spec.format != "extension":
        for pname, schema in props.items():
            if not isinstance(schema, dict) or not str(schema.get("description", "")).strip():
                add("warning", "parameter-without-description",
                    f"{spec.name}: parameter {pname!r} has no description",
                    f'add "description" to {pname!r}: what the value means, with an example')
    if keprompt and params.get("additionalProperties") is not False:
        add("warning", "additional-properties",
            f"{spec.name}: additionalProperties is not false",
            'add "additionalProperties": false to the parameters object')
    return out


# ---- keprompt executables: the protocol, by running them ---------------------------------


@dataclass
class _Probe:
    result: ProcResult | None
    seconds: float
    spawn_error: str | None = None


async def _probe(ctx: FormatContext, argv: list[str], cwd: Path,
                 stdin: bytes | None = None) -> _Probe:
    start = time.perf_counter()
    try:
        res = await ctx.lister(argv, timeout=PROBE_TIMEOUT_S, cwd=cwd, env=ctx.env or None,
                               stdin=stdin)
    except OSError as e:
        from tuiapp.tools.proc import spawn_error

        return _Probe(None, time.perf_counter() - start, spawn_error(Path(argv[0]), e))
    return _Probe(res, time.perf_counter() - start)


def _listing(probe: _Probe) -> tuple[list[dict[str, Any]] | None, str]:
    """The parsed definitions, or None and why not."""
    from tuiapp.tools.formats.keprompt import parse_definitions, stderr_tail

    if probe.spawn_error:
        return None, probe.spawn_error
    res = probe.result
    assert res is not None
    if res.timed_out:
        return None, f"--list-functions timed out after {PROBE_TIMEOUT_S:g} s"
    if res.exit_code != 0:
        tail = stderr_tail(res.stderr)
        return None, f"--list-functions exited {res.exit_code}" + (f": {tail}" if tail else "")
    try:
        return parse_definitions(res.stdout.decode("utf-8", errors="replace")), ""
    except ToolLoadError as e:
        return None, str(e)


def _denied(name: str, spec: ToolSpec | None, approval: ApprovalConfig | None) -> str | None:
    """The deny rule that stops calling `name`, if any: a probe that calls a function is a
    call, and the one policy decision (as for `kep call`) says whether it may run."""
    if approval is None:
        return None
    verdict = policy.decide_direct(ToolCall("check", name, {}), approval, os.environ, spec=spec)
    return verdict.rule if verdict.action == "deny" else None


async def keprompt_findings(path: Path, ctx: FormatContext,
                            approval: ApprovalConfig | None = None,
                            specs: Sequence[ToolSpec] = ()) -> list[Finding]:
    src = str(path)
    out: list[Finding] = []

    def add(sev: Severity, code: str, msg: str, fix: str, tool: str | None = None) -> None:
        out.append(Finding(sev, code, src, tool, msg, fix))

    try:
        st = path.stat()
        with path.open("rb") as f:
            head = f.read(4)
    except OSError as e:
        add("error", "unreadable", f"cannot read: {e.strerror}", "check the file's permissions")
        return out
    if not head.startswith(b"#!") and head != b"\x7fELF":
        add("error", "no-shebang", "no shebang: the first line does not name an interpreter",
            "make line 1 #!/usr/bin/env python3 (or #!/usr/bin/env bash)")
        return out
    if not stat.S_IMODE(st.st_mode) & 0o111:
        add("error", "not-executable", "not executable", f"chmod +x {path}")
        return out
    root_probe = await _probe(ctx, [src, "--list-functions"], ctx.project_root)
    here_probe = await _probe(ctx, [src, "--list-functions"], path.parent)
    defs, why = _listing(root_probe)
    here_defs, _ = _listing(here_probe)
    if defs is None:
        if here_defs is not None and path.parent.resolve() != ctx.project_root.resolve():
            add("error", "relative-paths",
                f"--list-functions fails from the project root but works from its own "
                f"folder ({why})",
                "resolve files from the script's location, e.g. "
                "Path(__file__).parent / 'data.json' or \"$(dirname \"$0\")/data.json\"")
        else:
            add("error", "list-not-array", f"--list-functions is not a JSON array: {why}",
                "print a JSON array of {name, description, parameters} to stdout, exit 0")
        return out
    if here_defs is not None and here_defs != defs:
        add("warning", "relative-paths",
            "--list-functions prints something else from its own folder than from the "
            "project root: it reads paths relative to the working directory",
            "resolve files from the script's location, e.g. Path(__file__).parent / 'x'")
    seconds = min(root_probe.seconds, here_probe.seconds)
    if seconds > SLOW_LISTING_S:
        add("warning", "slow-listing",
            f"--list-functions took {seconds * 1000:.0f} ms (over {SLOW_LISTING_S * 1000:.0f})",
            "print the definitions before importing heavy modules or touching the network")
    version = await _probe(ctx, [src, "--version"], ctx.project_root)
    if version.result is None or version.result.exit_code != 0 \
            or not version.result.stdout.strip():
        add("info", "no-version", "no --version", "answer --version with one line, e.g. 1.0")
    skipped: list[str] = []
    rule = _denied(UNKNOWN_NAME, None, approval)
    unknown = (_Probe(None, 0.0) if rule else
               await _probe(ctx, [src, UNKNOWN_NAME], ctx.project_root, stdin=b"{}"))
    if rule:
        skipped.append(f"the unknown-name probe (denied by {rule})")
    if unknown.result is not None and not unknown.result.timed_out:
        if unknown.result.exit_code == 0:
            add("warning", "unknown-name-exits-0",
                "an unknown function name exits 0 (the model would take it as success)",
                "print 'unknown function NAME' to stderr and exit 1")
        elif not unknown.result.stderr.strip():
            add("warning", "unknown-name-silent",
                "an unknown function name fails with nothing on stderr",
                "print 'unknown function NAME' to stderr before exiting non-zero")
    if defs:
        first = defs[0]["name"]
        spec = next((t for t in specs if t.name == first), None)
        rule = _denied(first, spec, approval)
        bad = (_Probe(None, 0.0) if rule else
               await _probe(ctx, [src, first], ctx.project_root, stdin=MALFORMED_STDIN))
        if rule:
            skipped.append(f"the malformed-input probe of {first} (denied by {rule})")
        if bad.result is not None and not bad.result.timed_out and bad.result.exit_code == 0:
            add("warning", "malformed-stdin-exits-0",
                f"{first} exits 0 on malformed JSON input", "parse stdin with json.loads "
                "(or jq); on failure print the reason to stderr and exit 1", tool=first)
    for what in skipped:
        add("info", "probe-denied", f"skipped {what}",
            "nothing to fix; allow the tool in [[approval.rules]] to run this probe")
    return out


# ---- the whole registry --------------------------------------------------------------------


async def check_entries(entries: Sequence[ToolSpec | BrokenTool], ctx: FormatContext,
                        *, approval: ApprovalConfig | None = None,
                        include_builtins: bool = False) -> list[Finding]:
    """Findings for every source in `entries` (what the registry listed), sorted by source."""
    findings: list[Finding] = []
    keprompt_files: dict[str, None] = {}
    for e in entries:
        if e.source.startswith("mcp:") or (not include_builtins and _is_builtin(e.source)):
            continue
        if e.format == "keprompt":
            keprompt_files.setdefault(e.source)
            if isinstance(e, ToolSpec):
                findings += spec_findings(e, keprompt=True)
        elif isinstance(e, ToolSpec):
            findings += spec_findings(e, keprompt=False)
        else:
            findings.append(Finding("error", "broken", e.source, None, e.error,
                                    broken_hint(e.error, e.format)))
    gate = asyncio.Semaphore(PARALLEL)

    async def one(src: str) -> list[Finding]:
        async with gate:
            specs = [e for e in entries if isinstance(e, ToolSpec) and e.source == src]
            return await keprompt_findings(Path(src), ctx, approval, specs)

    for found in await asyncio.gather(*(one(s) for s in keprompt_files)):
        findings += found
    order = {s: i for i, s in enumerate(SEVERITIES)}
    findings.sort(key=lambda f: (f.source, order[f.severity], f.tool or "", f.code))
    return findings


def broken_hint(error: str, fmt: str = "") -> str:
    """A one-line fix for a registry error (the error text itself says what is wrong); ""
    for an MCP server's tool, whose fix is not in any file of the project."""
    if fmt == "mcp":
        return ""
    low = error.lower()
    if "not executable" in low:
        return "chmod +x the file"
    if "shebang" in low or "interpreter" in low:
        return "make line 1 #!/usr/bin/env python3 (or bash), with that interpreter installed"
    if "timed out" in low:
        return "list the tools without slow work at import time, or raise [tools] list_timeout"
    if "json" in low or "array" in low or "wrong shape" in low or "printed nothing" in low:
        return "print only the JSON array on stdout; send logs to stderr"
    if "schema" in low:
        return "fix the parameters: a JSON schema object with \"type\": \"object\""
    if "syntax" in low or "import" in low or "traceback" in low:
        return "run the file with python to see the error, fix it and save"
    return "open the source, fix what the message says, save: hot reload picks it up"
