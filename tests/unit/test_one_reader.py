"""Every read of a file a checkout controls goes through tuiapp.security.project_files (whose
bounded reading is tuiapp.settings.file_reader, so that the settings layer can use it too).

The source tree is scanned for raw reads (`open`, `Path.open`, `os.open`, `read_text`,
`read_bytes`, `tomllib.load`, `json.load`, `yaml.safe_load`, dotenv reading a file by name).
Each one outside project_files must be on the list below, with the reason it is not a project
file. A new raw read fails here until it is routed through the reader or listed with a reason.

A read through the reader is confined (`confine=ROOT`: nothing outside the project, nothing
hidden, no link out) unless it is listed in UNCONFINED with the reason. A file found by walking
the project (a `.gitignore` met by `@` completion) must be confined: through a link it could
read any file on the machine.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.xdist_group("one_reader")  # one worker: one scan of the tree

TUIAPP = REPO / "tuiapp"
READERS = {"tuiapp/security/project_files.py", "tuiapp/settings/file_reader.py"}

# (module, enclosing function) -> why the file read there is not one a checkout controls.
ALLOWED: dict[tuple[str, str], str] = {
    ("tuiapp/settings/config_reader.py", "read_regular"): "the bounded reader itself, for the "
                                                          "settings layer (below security)",
    ("tuiapp/commands/functions_watch.py", "__call__"): "opens /dev/null for writing",
    ("tuiapp/commands/mcp.py", "_protocol_fds"): "opens /dev/null",
    ("tuiapp/security/logfile.py", "__init__"): "kep's own log, opened for writing",
    ("tuiapp/mcp/oauth_store.py", "_write"): "kep's own OAuth token file, written (0600, "
                                             "O_NOFOLLOW, data folder)",
    ("tuiapp/mcp/known_tools.py", "known"): "kep's own cache (tool names it saved)",
    ("tuiapp/mcp/known_tools.py", "remember"): "kep's own cache (tool names it saved)",
    ("tuiapp/mcp/startup.py", "kill_wrapper_group"): "kep's own MCP log and /proc/PID/cmdline",
    ("tuiapp/settings/toml_write.py", "_umask"): "/proc/self/status",
    ("tuiapp/tools/cache.py", "load"): "kep's own declaration cache",
    ("tuiapp/tools/call_output.py", "open_private"): "a spool file kep creates (O_NOFOLLOW)",
    ("tuiapp/tools/forkserver_boot.py", "__init__"): "/dev/null, in the fork server child",
    ("tuiapp/tools/forkserver_boot.py", "run_main"): "a tool's source, read in the tool's "
                                                     "own (sandboxed) child, not in kep",
    ("tuiapp/tools/formats/_child_python.py", "call"): "appends to the output file, in the "
                                                       "tool's own child",
    ("tuiapp/tools/lifetime.py", "descendants"): "/proc/PID/stat",
    ("tuiapp/tools/proc.py", "_kill_unwatched"): "/proc/PID/stat and environ",
    ("tuiapp/tools/lifetime.py", "marked_pids"): "/proc/PID/environ",
    ("tuiapp/tools/listing_snapshot.py", "_write"): "kep's own cache, written (O_EXCL)",
    ("tuiapp/tools/templates.py", "create"): "writes a new tool file (O_CREAT|O_EXCL)",
    ("tuiapp/security/trust.py", "records"): "kep's own trust state (state dir)",
    ("tuiapp/ui/app.py", "load_later_css"): "kep's own stylesheet, shipped in the package",
    ("tuiapp/ui/screenshots.py", "check_no_leaks"): "SVGs the screenshot script wrote",
    ("tuiapp/commands/help.py", "main"): "kep's own documentation, shipped in the package",
    ("tuiapp/docs/__init__.py", "search"): "kep's own documentation, shipped in the package",
    ("tuiapp/docs/__init__.py", "title"): "kep's own documentation, shipped in the package",
    ("tuiapp/security/sandbox/exec_check.py", "programs"): "the first 256 bytes of a program "
                                                       "about to start: names a missing "
                                                       "interpreter",
    ("tuiapp/security/approval_flow.py", "_fingerprint"): "hashes a tool file through an fd "
                                                      "checked with fstat, bounded",
    ("tuiapp/conversation/project_marks.py", "get"): "kep's own data dir, capped read",
    ("tuiapp/conversation/session_lock.py", "acquire"): "kep's own lock file (O_NOFOLLOW)",
    ("tuiapp/conversation/store.py", "open"): "creates kep's own session database",
    ("tuiapp/mcp/connection.py", "_log_tail"): "kep's own MCP log (state dir)",
    ("tuiapp/tools/call_output.py", "read_capped"): "a tool's output file in kep's spool",
    ("tuiapp/tools/forkserver.py", "start"): "kep's own boot script, shipped in the package",
    ("tuiapp/security/sandbox/starters.py", "_program"): "the starter's program, shipped in "
                                                          "the package",
    ("tuiapp/security/sandbox/starter_transport.py", "_pid_of"): "/proc/self/fdinfo of a "
                                                                 "pidfd",
    ("tuiapp/security/sandbox/probe_memo.py", "key"): "the kernel's user namespace settings",
    ("tuiapp/security/sandbox/probe_memo.py", "passed"): "kep's own cache (a hash)",
    # the resident starter: runs inside the walls, never in kep, and opens only these
    ("tuiapp/security/sandbox/_child_starter.py", "read_mounts"): "/proc/self/mountinfo",
    ("tuiapp/security/sandbox/_child_starter.py", "__init__"): "/proc/self/ns/pid, cap_last_cap",
    ("tuiapp/security/sandbox/_child_starter.py", "map_user"): "/proc/self/uid_map and kin "
                                                               "(written)",
    ("tuiapp/security/sandbox/_child_starter.py", "fresh_tmp"): "mount points (O_PATH), made empty",
    ("tuiapp/security/sandbox/_child_starter.py", "run"): "/dev/null as a call's stdin",
    ("tuiapp/security/sandbox/_child_listing_starter.py", "main"): "/dev/null over the "
                                                                   "starter's fd 0",
    ("tuiapp/security/sandbox/_child_listing_starter.py", "__init__"): "/dev/null as a "
                                                                       "lister's stdin",
    ("tuiapp/tools/listing_snapshot.py", "lookup"): "kep's own cache",
    ("tuiapp/security/trust.py", "_locked"): "kep's own lock file (state dir)",
    ("tuiapp/ui/screens/output_viewer.py", "read_tail"): "a spool file kep wrote (0600, "
                                                         "state dir), tail read with a cap",
}

# (module, enclosing function) -> why its read through the reader needs no `confine=`.
UNCONFINED: dict[tuple[str, str], str] = {
    ("tuiapp/conversation/agent.py", "read_tools_txt"): "an agent's tools.txt: tool names "
                                                         "checked against the inventory",
    ("tuiapp/conversation/agent_yaml.py", "__init__"): "an agent's index.yaml, in the "
                                                       "agents folder kep chose",
    ("tuiapp/conversation/prompt_file.py", "load"): "the prompt file itself, in prompts/ or "
                                                    "the user's folder (its includes are "
                                                    "confined)",
    ("tuiapp/mcp/oauth_store.py", "_read"): "kep's own OAuth token file (data folder)",
    ("tuiapp/mcp/servers.py", "read_mcp_json"): "the .mcp.json trust covers",
    ("tuiapp/providers/wire.py", "load_image"): "an image path already confined where it "
                                                "was named (.image, prompt_statements)",
    ("tuiapp/security/project_items.py", "_bounded_text"): "the project's .env, read to "
                                                           "count what trust covers",
    ("tuiapp/security/trust_items.py", "read_project_files"): "kep.toml and .mcp.json, "
                                                              "hashed for trust",
    ("tuiapp/tools/check.py", "keprompt_findings"): "a tool file's first bytes, in the "
                                                    "functions folder",
    ("tuiapp/tools/formats/llm_functions.py", "_agent_variables"): "a tool folder's "
                                                                   "index.yaml",
    ("tuiapp/tools/formats/llm_functions.py", "_built"): "a tool folder's functions.json",
    ("tuiapp/tools/formats/llm_functions.py", "declare"): "a tool's source, to declare it",
    ("tuiapp/tools/formats/loki.py", "declare"): "a tool's source, to declare it",
    ("tuiapp/tools/formats/runtimes.py", "dotenv_values"): "the project's .env, for the "
                                                           "tools' environment",
    ("tuiapp/tools/formats/yaml_file.py", "read_yaml"): "a tool's own YAML declaration",
    ("tuiapp/tools/shebang.py", "read_shebang"): "a tool file's first line",
    ("tuiapp/tools/templates.py", "_register_aitool_dir"): "the kep.toml being edited",
    ("tuiapp/ui/actions.py", "_has_key"): "a config file being edited by the user",
    ("tuiapp/ui/prompt_editor.py", "edit_prompt"): "the temporary file the user's editor "
                                                   "wrote",
    ("tuiapp/ui/screens/tool_editor.py", "__init__"): "a tool file the user opened to edit",
}

READ_ATTRS = {"open", "read_text", "read_bytes"}
PARSE_LOADS = {("tomllib", "load"), ("json", "load"), ("yaml", "safe_load"), ("yaml", "load"),
               ("yaml", "full_load")}
NOT_FILE_OPENS = {"_open", "remember_open", "wrap_file"}


def _is_raw_read(node: ast.Call) -> str | None:
    f = node.func
    if isinstance(f, ast.Name) and f.id == "open":
        return "open()"
    if isinstance(f, ast.Name) and f.id in ("dotenv_values", "load_dotenv") and \
            not any(k.arg == "stream" for k in node.keywords):
        return f"{f.id}() of a file"
    if isinstance(f, ast.Attribute):
        if f.attr in READ_ATTRS:
            owner = f.value
            if isinstance(owner, ast.Name) and owner.id in ("Store", "cls", "project_files"):
                return None  # the session database; the one reader itself
            return f".{f.attr}()"
        if isinstance(f.value, ast.Name) and (f.value.id, f.attr) in PARSE_LOADS:
            return f"{f.value.id}.{f.attr}()"
    return None


@functools.cache  # one scan of the tree for the tests that read it
def raw_reads() -> list[tuple[str, str, int, str]]:
    found = []
    for file in sorted(TUIAPP.rglob("*.py")):
        rel = file.relative_to(REPO).as_posix()
        if rel in READERS:
            continue
        tree = ast.parse(file.read_text(encoding="utf-8"))
        scopes: list[tuple[ast.AST, str]] = [(tree, "<module>")]
        while scopes:
            node, scope = scopes.pop()
            for child in ast.iter_child_nodes(node):
                inner = scope
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                    inner = child.name
                if isinstance(child, ast.Call):
                    what = _is_raw_read(child)
                    if what:
                        found.append((rel, scope, child.lineno, what))
                scopes.append((child, inner))
    return found


def test_no_raw_read_of_a_project_file_outside_the_one_reader() -> None:
    stray = [f"{rel}:{line} {what} in {scope}()" for rel, scope, line, what in raw_reads()
             if (rel, scope) not in ALLOWED]
    assert not stray, ("raw file reads outside tuiapp/security/project_files.py; route them "
                       "through it, or list them in ALLOWED with the reason:\n"
                       + "\n".join(stray))


def test_every_allowance_is_still_used() -> None:
    used = {(rel, scope) for rel, scope, _, _ in raw_reads()}
    stale = sorted(set(ALLOWED) - used)
    assert not stale, f"allowances no read needs any more (remove them): {stale}"


def test_the_scan_finds_a_planted_raw_read(tmp_path: Path) -> None:
    """The scan itself is honest: each shape of raw read is found."""
    src = ("import json, tomllib, yaml\n"
           "def f(p):\n"
           "    open(p); p.open('rb'); p.read_text(); p.read_bytes()\n"
           "    tomllib.load(p); json.load(p); yaml.safe_load(p)\n")
    calls = [n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Call)]
    kinds = {_is_raw_read(c) for c in calls} - {None}
    assert kinds == {"open()", ".open()", ".read_text()", ".read_bytes()", "tomllib.load()",
                     "json.load()", "yaml.safe_load()"}


@functools.cache
def unconfined_reads() -> list[tuple[str, str, int]]:
    """Calls of project_files.read_* without `confine=` (the reader's own module aside)."""
    found = []
    for file in sorted(TUIAPP.rglob("*.py")):
        rel = file.relative_to(REPO).as_posix()
        if rel in READERS:
            continue
        found += [(rel, scope, line) for scope, line in _unconfined_in(file.read_text("utf-8"))]
    return found


def _unconfined_in(source: str) -> list[tuple[str, int]]:
    out = []
    scopes: list[tuple[ast.AST, str]] = [(ast.parse(source), "<module>")]
    while scopes:
        node, scope = scopes.pop()
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) \
                else scope
            f = child.func if isinstance(child, ast.Call) else None
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                    and f.value.id == "project_files" and f.attr.startswith("read_") \
                    and not any(k.arg == "confine" for k in child.keywords):  # type: ignore[union-attr]
                out.append((scope, child.lineno))
            scopes.append((child, inner))
    return out


def test_every_read_through_the_reader_is_confined_or_listed() -> None:
    stray = [f"{rel}:{line} in {scope}()" for rel, scope, line in unconfined_reads()
             if (rel, scope) not in UNCONFINED]
    assert not stray, ("project-file reads without confine=ROOT; confine them, or list them in "
                       "UNCONFINED with the reason:\n" + "\n".join(stray))


def test_every_unconfined_allowance_is_still_used() -> None:
    used = {(rel, scope) for rel, scope, _ in unconfined_reads()}
    stale = sorted(set(UNCONFINED) - used)
    assert not stale, f"UNCONFINED allowances no read needs any more (remove them): {stale}"


def test_the_scan_finds_a_planted_unconfined_read() -> None:
    src = ("def _spec(folder, root):\n"
           "    project_files.read_text(folder / '.gitignore', errors='replace')\n"
           "    project_files.read_text(folder / 'x', confine=root)\n")
    assert _unconfined_in(src) == [("_spec", 2)]
