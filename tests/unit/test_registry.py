"""The registry: broken files isolated, duplicates, overrides, cache, incremental refresh."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from tools_testutil import PY, make_config, one_def, read_pid, sh_tool, wait_gone

from tuiapp.settings import paths
from tuiapp.tools.registry import Registry
from tuiapp.vocab.tool_specs import BrokenTool, ToolSpec

WRAPPED = (
    '  echo \'[{"type": "function", "function": {"name": "wrapped", '
    '"description": "w", "parameters": {"type": "object"}}}]\''
)


def zoo(fn: Path, pidfile: Path) -> dict[str, str]:
    """Every keprompt failure mode beside good tools. Returns file name → expected error."""
    sh_tool(fn / "good", one_def("good"))
    sh_tool(fn / "wrapped", WRAPPED)
    sh_tool(fn / "object", '  echo \'{"name": "o", "description": "o"}\'')
    sh_tool(fn / "nodesc", '  echo \'[{"name": "nodesc", "parameters": {"type": "object"}}]\'')
    sh_tool(fn / "trailing", one_def("trailing") + "; echo 'Loaded OK'")
    sh_tool(fn / "exit3", "  echo 'cannot open database' >&2; exit 3")
    sh_tool(fn / "hangs", "  sleep 30")
    sh_tool(fn / "hangchild", f"  sleep 300 &\n  echo $! > {pidfile}\n  wait")
    (fn / "noshebang").write_text("echo '[]'\n")
    (fn / "noshebang").chmod(0o755)
    (fn / "notexec").write_text("#!/bin/sh\necho '[]'\n")
    (fn / "helper.py").write_text("HELPER = True\n")  # not a tool, not an error
    return {
        "object": "printed an object, expected an array",
        "nodesc": 'has no "description"',
        "trailing": "trailing text after the JSON",
        "exit3": "exit code 3): cannot open database",
        "hangs": "timed out after 1 s",
        "hangchild": "timed out after 1 s",
        "noshebang": "no shebang",
        "notexec": "not executable",
    }


@pytest.mark.slow
@pytest.mark.usefixtures("unsandboxed")  # reads pids from outside
async def test_every_failure_mode_is_reported_and_the_rest_load(
    project: Path, tmp_path: Path
) -> None:
    fn = project / "prompts" / "functions"
    pidfile = tmp_path / "child.pid"
    expected = zoo(fn, pidfile)
    reg = Registry(make_config(project, list_timeout=1))
    change = await reg.refresh()
    assert set(reg.tools) == {"good", "wrapped"}
    errors = {Path(b.source).name: b.error for b in reg.broken}
    assert errors.keys() == expected.keys()
    for name, text in expected.items():
        assert text in errors[name], (name, errors[name])
    assert set(change.added) == {"good", "wrapped"}
    assert set(change.broken) == {str(fn / n) for n in expected}
    # The hung lister's child was killed with its group: no orphan left behind.
    assert wait_gone(read_pid(pidfile))


async def test_python_fork_server_matches_a_real_start(project: Path, tmp_path: Path) -> None:
    """Several Python tools are declared through one warm interpreter; each still sees what
    a real start gives it: __main__, argv, cwd, sys.path[0], empty stdin, exit codes."""
    fn = project / "prompts" / "functions"
    (fn / "shared_helper.py").write_text("GREETING = 'hi'\n")
    body = (
        f"#!{PY}\n"
        "import atexit, json, os, sys\n"
        "from shared_helper import GREETING\n"
        "atexit.register(lambda: print(json.dumps([{'name': os.path.basename(sys.argv[0]),\n"
        "    'description': json.dumps([GREETING, os.getcwd(), sys.argv[1:], sys.stdin.read(),\n"
        "                               os.getppid()])}])))\n"
        "if __name__ != '__main__':\n"
        "    sys.exit(9)\n"
    )
    for name in ("p1", "p2", "p3"):
        (fn / name).write_text(body)
        (fn / name).chmod(0o755)
    (fn / "p4").write_text(f"#!{PY}\nimport sys\nsys.exit('p4 says no')\n")
    (fn / "p5").write_text(f"#!{PY}\nraise RuntimeError('p5 crashed')\n")
    for name in ("p4", "p5"):
        (fn / name).chmod(0o755)
    reg = Registry(make_config(project))
    await reg.refresh()
    for name in ("p1", "p2", "p3"):
        greeting, cwd, args, stdin, ppid = json.loads(reg.tools[name].description)
        assert (greeting, cwd, args, stdin) == ("hi", str(project), ["--list-functions"], "")
        assert ppid != os.getpid()  # forked from the server, not started by kep itself
    errors = {Path(b.source).name: b.error for b in reg.broken}
    assert errors["p4"] == "--list-functions failed (exit code 1): p4 says no"
    assert "RuntimeError: p5 crashed" in errors["p5"]


@pytest.mark.slow
@pytest.mark.usefixtures("unsandboxed")  # reads pids from outside
async def test_hung_python_lister_in_fork_server_loses_its_child_too(
    project: Path, tmp_path: Path
) -> None:
    fn = project / "prompts" / "functions"
    pidfile = tmp_path / "child.pid"
    for i in range(3):
        (fn / f"ok{i}").write_text(f"#!{PY}\nprint('[]')\n")
        (fn / f"ok{i}").chmod(0o755)
    (fn / "hung").write_text(
        f"#!{PY}\nimport subprocess, time\n"
        f"p = subprocess.Popen(['sleep', '300'])\nopen({str(pidfile)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(300)\n"
    )
    (fn / "hung").chmod(0o755)
    reg = Registry(make_config(project, list_timeout=1))
    await reg.refresh()
    assert [Path(b.source).name for b in reg.broken] == ["hung"]
    assert "timed out" in reg.broken[0].error
    assert wait_gone(read_pid(pidfile))


async def test_unchanged_tree_spawns_no_process(project: Path, tmp_path: Path) -> None:
    fn = project / "prompts" / "functions"
    counter = tmp_path / "count"
    for name in ("a", "b"):
        sh_tool(fn / name, f"  echo x >> {counter}\n" + one_def(name))
    sh_tool(fn / "bad", f"  echo x >> {counter}; echo nope")
    cfg = make_config(project)
    first = Registry(cfg)
    await first.refresh()
    assert counter.read_text().count("x") == 3
    # A new process (a fresh Registry) with the same tree: everything comes from the cache,
    # broken entries included.
    second = Registry(cfg)
    change = await second.refresh()
    assert counter.read_text().count("x") == 3
    assert set(second.tools) == {"a", "b"} and len(second.broken) == 1
    assert set(change.added) == {"a", "b"}
    # The same registry again: nothing changes, nothing runs.
    assert (await second.refresh()).is_empty()
    assert counter.read_text().count("x") == 3
    # Touching one file re-lists only that one.
    sh_tool(fn / "a", f"  echo x >> {counter}\n" + one_def("a2"))
    change = await Registry(cfg).refresh()
    assert counter.read_text().count("x") == 4
    assert change.added == ("a2", "b")  # a fresh registry: all are new to it


async def test_chmod_x_is_noticed_although_mtime_stays(project: Path) -> None:
    fn = project / "prompts" / "functions"
    tool = sh_tool(fn / "t", one_def("t"))
    tool.chmod(0o644)
    reg = Registry(make_config(project))
    await reg.refresh()
    assert "not executable" in reg.broken[0].error
    tool.chmod(0o755)
    change = await reg.refresh()
    assert change.added == ("t",) and change.recovered == (str(tool),)


async def test_deleting_a_broken_file_is_a_change(project: Path) -> None:
    """`kep functions --watch` said nothing when a broken file went away: it is a change."""
    fn = project / "prompts" / "functions"
    tool = sh_tool(fn / "t", one_def("t"))
    tool.chmod(0o644)
    reg = Registry(make_config(project))
    await reg.refresh()
    assert reg.broken
    tool.unlink()
    change = await reg.refresh()
    assert change.removed == (str(tool),) and not reg.broken and not change.is_empty()


async def test_incremental_refresh_redeclares_given_paths(project: Path, tmp_path: Path) -> None:
    fn = project / "prompts" / "functions"
    counter = tmp_path / "count"
    a = sh_tool(fn / "a", f"  echo x >> {counter}\n" + one_def("a"))
    sh_tool(fn / "b", f"  echo x >> {counter}\n" + one_def("b"))
    reg = Registry(make_config(project))
    await reg.refresh()
    # Same size and mtime (e.g. a coarse filesystem clock): only `paths` forces a re-list.
    st = a.stat()
    a.write_text(a.read_text().replace('"a tool"', '"A tool"'))
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (await reg.refresh()).is_empty()
    change = await reg.refresh([a])
    assert change.changed == ("a",) and reg.tools["a"].description == "A tool"
    assert counter.read_text().count("x") == 3
    a.unlink()
    change = await reg.refresh([a])
    assert change.removed == ("a",) and set(reg.tools) == {"b"}


async def test_duplicates_first_by_sorted_path_wins(project: Path, tmp_path: Path) -> None:
    fn = project / "prompts" / "functions"
    sh_tool(fn / "b_second", one_def("same"))
    sh_tool(fn / "a_first", one_def("same"))
    extra = tmp_path / "extra"
    sh_tool(extra / "aaa", one_def("same"))  # a configured dir comes after the project's
    reg = Registry(make_config(project, dirs=[str(extra)]))
    await reg.refresh()
    assert reg.tools["same"].source == str(fn / "a_first")
    assert sorted((Path(b.source).name, b.error) for b in reg.broken) == [
        ("aaa", f"duplicate of same from {fn / 'a_first'}"),
        ("b_second", f"duplicate of same from {fn / 'a_first'}"),
    ]


@pytest.mark.slow
async def test_project_function_overrides_builtin_silently(project: Path) -> None:
    fn = project / "prompts" / "functions"
    sh_tool(fn / "mine", one_def("readfile"))
    reg = Registry(make_config(project, builtins=True))
    await reg.refresh()
    assert reg.tools["readfile"].source == str(fn / "mine")
    assert reg.broken == []
    builtin_dir = paths.builtin_functions_dir()
    assert reg.tools["writefile"].source == str(builtin_dir / "files")
    assert {"execcmd", "listdir", "grep", "wwwget"} <= set(reg.tools)
    # Built-ins can be switched off.
    reg.reconfigure(make_config(project, builtins=False))
    change = await reg.refresh()
    assert set(reg.tools) == {"readfile"} and "writefile" in change.removed


async def test_external_sources_join_and_leave(project: Path) -> None:
    sh_tool(project / "prompts" / "functions" / "t", one_def("local"))
    reg = Registry(make_config(project))
    await reg.refresh()
    remote = ToolSpec("remote", "r", {"type": "object"}, "mcp", "mcp:srv")
    clash = ToolSpec("local", "l", {"type": "object"}, "mcp", "mcp:srv")
    change = reg.set_external("mcp:srv", [remote, clash, BrokenTool("mcp:other", "mcp", "down")])
    assert change.added == ("remote",)
    assert set(change.broken) == {"mcp:srv", "mcp:other"}
    assert reg.tools["local"].format == "keprompt"  # files come first
    entries = reg.entries()
    assert [e.name for e in entries if isinstance(e, ToolSpec)] == ["local", "remote"]
    change = reg.set_external("mcp:srv", [])
    assert change.removed == ("remote",)
    assert reg.broken == []


async def test_watch_roots_and_missing_dirs(tmp_path: Path) -> None:
    reg = Registry(make_config(tmp_path, dirs=["more"]))
    assert reg.watch_roots()[:2] == [tmp_path / "prompts" / "functions", tmp_path / "more"]
    assert (await reg.refresh()).is_empty()  # nothing there: no error either
    assert reg.entries() == []


async def test_a_crashing_format_is_contained(project: Path) -> None:
    from tuiapp.tools.formats.keprompt import KepromptFormat

    class Buggy(KepromptFormat):
        async def declare(self, path: Path, ctx):  # type: ignore[no-untyped-def]
            raise KeyError("oops")

    sh_tool(project / "prompts" / "functions" / "t", one_def("t"))
    reg = Registry(make_config(project), formats=[Buggy()])
    await reg.refresh()
    assert reg.tools == {}
    assert "internal error reading this file: KeyError" in reg.broken[0].error


def test_registry_and_config_stay_light() -> None:
    """The warm path's modules import no jsonschema (checked in a fresh interpreter)."""
    import subprocess

    code = (
        "import sys, tuiapp.tools.registry, tuiapp.commands.functions;"
        "print([m for m in ('jsonschema', 'textual', 'openai', 'anthropic', 'mcp')"
        " if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_entries_are_sorted_ok_then_broken() -> None:
    reg = Registry(make_config(Path("/nonexistent")))
    reg.set_external(
        "x",
        [
            BrokenTool("z", "mcp", "e"),
            ToolSpec("b", "", {}, "mcp", "x"),
            ToolSpec("a", "", {}, "mcp", "x"),
            BrokenTool("y", "mcp", "e"),
        ],
    )
    assert [getattr(e, "name", None) or e.source for e in reg.entries()] == ["a", "b", "y", "z"]


async def test_a_mangled_cache_is_only_a_miss(project: Path, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    sh_tool(project / "prompts" / "functions" / "t", f"  echo x >> {counter}\n" + one_def("t"))
    cfg = make_config(project)
    await Registry(cfg).refresh()
    (cache_file,) = (paths.cache_dir() / "declarations").glob("keprompt-*.json")
    data = json.loads(cache_file.read_text())
    for entry in data["files"].values():
        entry["tools"] = [{"nonsense": True}]
    cache_file.write_text(json.dumps(data))
    reg = Registry(cfg)
    await reg.refresh()
    assert set(reg.tools) == {"t"} and counter.read_text().count("x") == 2
    cache_file.write_text("{not json")
    reg = Registry(cfg)
    await reg.refresh()
    assert set(reg.tools) == {"t"} and counter.read_text().count("x") == 3


async def test_timeouts_are_not_cached(project: Path, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    sh_tool(project / "prompts" / "functions" / "slow", f"  echo x >> {counter}; sleep 5")
    cfg = make_config(project, list_timeout=0.3)
    for runs in (1, 2):
        reg = Registry(cfg)
        await reg.refresh()
        assert "timed out" in reg.broken[0].error
        assert counter.read_text().count("x") == runs  # tried again: it may be fast next time
