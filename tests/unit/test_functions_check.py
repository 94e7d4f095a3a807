"""The protocol check: each finding on a fixture that has exactly that fault."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest
from conftest import KEP, kep_env
from tools_testutil import make_config

from tuiapp.tools.check import Finding, check_entries, exit_status
from tuiapp.tools.registry import Registry

SCHEMA = ('{"type":"object","properties":{"who":{"type":"string","description":"who to '
          'greet, e.g. Ada"}},"required":["who"],"additionalProperties":false}')
DEFS = f'[{{"name":"greet","description":"Greet someone by name.","parameters":{SCHEMA}}}]'


def tool_text(*, defs: str = DEFS, listing: str | None = None, version: str = "echo 1.0",
              run: str | None = None, unknown: str = 'echo "unknown function $1" >&2; exit 1',
              shebang: str = "#!/bin/sh\n") -> str:
    listing = listing if listing is not None else f"echo '{defs}'"
    run = run if run is not None else (
        "input=$(cat); case \"$input\" in '{'*'}') echo \"hello\";; "
        "*) echo 'bad JSON on stdin' >&2; exit 1;; esac")
    return (f"{shebang}case \"$1\" in\n--list-functions) {listing};;\n--version) {version};;\n"
            f"greet) {run};;\n*) {unknown};;\nesac\n")


def put(project: Path, text: str, name: str = "greet", mode: int = 0o755) -> Path:
    path = project / "prompts" / "functions" / name
    path.write_text(text)
    path.chmod(mode)
    return path


def check(project: Path) -> list[Finding]:
    async def go() -> list[Finding]:
        reg = Registry(make_config(project))
        await reg.refresh()
        return await check_entries(reg.entries(), reg.context())
    return asyncio.run(go())


def codes(findings: list[Finding]) -> set[str]:
    return {f.code for f in findings}


def test_a_compliant_tool_is_clean(project: Path) -> None:
    put(project, tool_text())
    assert check(project) == []


@pytest.mark.parametrize(("kwargs", "mode", "code", "severity"), [
    ({}, 0o644, "not-executable", "error"),
    ({"shebang": ""}, 0o755, "no-shebang", "error"),
    ({"listing": "echo '{\"name\": \"greet\"}'"}, 0o755, "list-not-array", "error"),
    ({"defs": DEFS.replace("Greet someone by name.", "")}, 0o755, "no-description", "warning"),
    ({"defs": DEFS.replace("Greet someone by name.", "Greets")}, 0o755,
     "one-word-description", "warning"),
    ({"defs": DEFS.replace(',"description":"who to greet, e.g. Ada"', "")}, 0o755,
     "parameter-without-description", "warning"),
    ({"defs": DEFS.replace(',"additionalProperties":false', "")}, 0o755,
     "additional-properties", "warning"),
    ({"version": "exit 1"}, 0o755, "no-version", "info"),
    ({"unknown": "echo whatever"}, 0o755, "unknown-name-exits-0", "warning"),
    ({"unknown": "exit 3"}, 0o755, "unknown-name-silent", "warning"),
    ({"run": "cat >/dev/null; echo fine"}, 0o755, "malformed-stdin-exits-0", "warning"),
    ({"listing": f"sleep 0.7; echo '{DEFS}'"}, 0o755, "slow-listing", "warning"),
])
def test_each_finding_on_its_fixture(project: Path, kwargs: dict[str, str], mode: int,
                                     code: str, severity: str) -> None:
    put(project, tool_text(**kwargs), mode=mode)
    found = check(project)
    assert codes(found) == {code}, found
    f = found[0]
    assert f.severity == severity and f.fix and "\n" not in f.fix


def test_relative_paths_found_by_running_from_the_project_root(project: Path) -> None:
    fn = project / "prompts" / "functions"
    (fn / "defs.json").write_text(DEFS)  # .json files are not tools
    put(project, tool_text(listing="cat defs.json"))
    found = check(project)
    assert codes(found) == {"relative-paths"}
    assert found[0].severity == "error" and "__file__" in found[0].fix


def test_relative_paths_fixed_by_resolving_from_the_script(project: Path) -> None:
    fn = project / "prompts" / "functions"
    (fn / "defs.json").write_text(DEFS)
    put(project, tool_text(listing='cat "$(dirname "$0")/defs.json"'))
    assert check(project) == []


def test_a_broken_tool_of_another_format_is_an_error_with_a_fix(project: Path) -> None:
    tools = project / "functions" / "tools"
    tools.mkdir(parents=True)
    (tools / "bad.py").write_text("def run(x: int:\n    pass\n")
    found = check(project)
    assert [f.code for f in found] == ["broken"]
    assert found[0].severity == "error" and found[0].fix


def test_loki_tool_descriptions_are_checked(project: Path) -> None:
    tools = project / "functions" / "tools"
    tools.mkdir(parents=True)
    (tools / "shout.py").write_text(
        'def run(text: str) -> str:\n    """Shout."""\n    return text.upper()\n')
    found = check(project)
    assert codes(found) == {"one-word-description", "parameter-without-description"}
    assert all(f.tool == "shout" for f in found)


def test_a_file_discovery_does_not_list_is_never_run(project: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    helper = project / "prompts" / "functions" / "helper.sh"  # no #!, no exec bit: no tool
    helper.write_text(f"touch {marker}\n")
    assert check(project) == []
    assert not marker.exists()


def test_exit_status_rules() -> None:
    def f(sev: str) -> Finding:
        return Finding(sev, "x", "s", None, "m", "fix")  # type: ignore[arg-type]
    assert exit_status([], strict=True) == 0
    assert exit_status([f("info")], strict=True) == 0
    assert exit_status([f("warning")], strict=False) == 0
    assert exit_status([f("warning")], strict=True) == 1
    assert exit_status([f("warning"), f("error")], strict=False) == 2


def kep(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KEP, *argv], capture_output=True, text=True, env=kep_env(),
                          timeout=60)


@pytest.mark.slow
def test_cli_exit_codes_json_and_hostile_text(project: Path) -> None:
    (project / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    put(project, tool_text())
    res = kep("functions", "--check", "--project", str(project))
    assert res.returncode == 0 and "All checks passed" in res.stdout, res.stderr
    esc_desc = DEFS.replace(',"additionalProperties":false', "").replace(
        "Greet someone by name.", "\\u001b[31mRed")
    put(project, tool_text(defs=esc_desc))
    res = kep("functions", "--check", "--project", str(project))
    assert res.returncode == 0, res.stdout
    assert "\x1b" not in res.stdout and "additional-properties" in res.stdout
    assert kep("functions", "--check", "--strict", "--project", str(project)).returncode == 1
    put(project, tool_text(), mode=0o644)
    res = kep("functions", "--check", "--json", "--project", str(project))
    assert res.returncode == 2
    data = json.loads(res.stdout)
    assert data["exit_status"] == 2 and data["counts"]["error"] == 1
    assert data["findings"][0]["code"] == "not-executable"
    assert "chmod +x" in data["findings"][0]["fix"]


def test_a_deny_rule_skips_the_probes_that_call_a_function(project: Path,
                                                           tmp_path: Path) -> None:
    import tomllib

    from tuiapp.settings import config

    marker = tmp_path / "called"
    put(project, tool_text(run=f"touch {marker}; cat >/dev/null; echo fine"))
    cfg = config.parse(tomllib.loads('[tools]\nbuiltins = false\n[[approval.rules]]\n'
                                     'tool = ".*"\naction = "deny"\n'), "test", project)

    async def go() -> list[Finding]:
        reg = Registry(cfg)
        await reg.refresh()
        return await check_entries(reg.entries(), reg.context(), approval=cfg.approval)

    found = asyncio.run(go())
    assert codes(found) == {"probe-denied"} and all(f.severity == "info" for f in found)
    assert len(found) == 2 and not marker.exists()


def test_a_broken_mcp_tool_gets_no_fix_in_the_project() -> None:
    """An MCP server's tool kep cannot run: no "open the source, fix it" (there is no source
    in the project); the functions panel and the workbench show the hint only when there is
    one."""
    from tuiapp.tools.check import broken_hint

    error = "task_only: it must be run as an MCP task (execution.taskSupport = required)"
    assert broken_hint(error, "mcp") == ""
    assert broken_hint(error, "keprompt").startswith("open the source")
