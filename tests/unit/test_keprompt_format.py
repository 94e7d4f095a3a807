"""The keprompt format on its own: definitions, candidates, one-line errors, invocation."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tools_testutil import make_config, one_def, sh_tool

from tuiapp.tools.formats.base import FormatContext, ToolLoadError
from tuiapp.tools.formats.keprompt import KepromptFormat, parse_definitions
from tuiapp.tools.proc import run_collect

FMT = KepromptFormat()
PARAMS = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}


def ctx_for(root: Path, **tools: object) -> FormatContext:
    return FormatContext(root, make_config(root, **tools), run_collect, os.environ.copy())


def error_of(text: str) -> str:
    with pytest.raises(ToolLoadError) as e:
        parse_definitions(text)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_plain_and_wrapped_definitions_are_accepted() -> None:
    plain = {"name": "a", "description": "A", "parameters": PARAMS}
    wrapped = {
        "type": "function",
        "function": {"name": "b-2", "description": "B", "parameters": PARAMS},
    }
    defs = parse_definitions(json.dumps([plain, wrapped]))
    assert [d["name"] for d in defs] == ["a", "b-2"]
    assert defs[1]["parameters"] == PARAMS


def test_missing_parameters_means_no_arguments() -> None:
    (d,) = parse_definitions('[{"name": "now", "description": "the time"}]')
    assert d["parameters"] == {"type": "object", "properties": {}}


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ('{"name": "a", "description": "A"}', "printed an object, expected an array"),
        ('[{"name": "a", "parameters": {"type": "object"}}]', 'a (item 1) has no "description"'),
        ('[{"name": "a", "description": 3}]', "description must be a string"),
        ('[{"description": "A"}]', 'item 1 has no "name"'),
        ('[{"name": "has space", "description": "A"}]', "invalid name 'has space'"),
        ('[{"name": "' + "x" * 65 + '", "description": "A"}]', "invalid name"),
        ('[{"name": "a", "description": "A"}] and more', "trailing text after the JSON"),
        ("hello", "not JSON"),
        ("", "printed nothing"),
        ('["a"]', "item 1 is a string, expected an object"),
        (
            '[{"name": "a", "description": "A", "parameters": {"type": "array"}}]',
            'parameters.type must be "object"',
        ),
        (
            '[{"name": "a", "description": "A", "parameters": {"type": "object", '
            '"properties": {"x": {"type": "strin"}}}}]',
            "invalid schema for a",
        ),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),  # a hostile lister
    ],
)
def test_each_wrong_output_is_one_line_saying_what_is_wrong(output: str, expected: str) -> None:
    assert expected in error_of(output)


def test_candidates_are_executables_and_shebang_scripts_sorted(tmp_path: Path) -> None:
    sh_tool(tmp_path / "b", one_def("b"))
    sh_tool(tmp_path / "a", one_def("a"))
    sh_tool(tmp_path / "defs.json", one_def("j"))
    sh_tool(tmp_path / "old.backup", one_def("k"))
    (tmp_path / "forgot_chmod").write_text("#!/bin/sh\necho '[]'\n")  # reported later
    (tmp_path / "helper.py").write_text("X = 1\n")  # a module beside the tools: ignored
    (tmp_path / "subdir").mkdir()
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert [p.name for p in FMT.candidates(tmp_path)] == ["a", "b", "forgot_chmod"]
    assert list(FMT.candidates(tmp_path / "missing")) == []


def test_roots_in_priority_order_without_duplicates(tmp_path: Path) -> None:
    ctx = ctx_for(tmp_path, dirs=["extra", "/abs/tools", "prompts/functions"], builtins=True)
    roots = FMT.roots(ctx)
    assert roots[0] == tmp_path / "prompts" / "functions"
    assert roots[1:3] == [tmp_path / "extra", Path("/abs/tools")]
    assert roots[-1].name == "functions" and len(roots) == 4  # built-ins last, no repeat


async def test_not_executable_is_reported_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "tool"
    path.write_text("#!/bin/sh\necho '[]'\n")
    with pytest.raises(ToolLoadError, match=r"not executable: run chmod \+x"):
        await FMT.declare(path, ctx_for(tmp_path))


async def test_no_shebang(tmp_path: Path) -> None:
    path = tmp_path / "tool"
    path.write_text("echo '[]'\n")
    path.chmod(0o755)
    with pytest.raises(ToolLoadError, match="no shebang"):
        await FMT.declare(path, ctx_for(tmp_path))


async def test_bad_interpreter_path(tmp_path: Path) -> None:
    path = sh_tool(tmp_path / "tool", one_def("t"))
    path.write_text("#!/nonexistent/python3\nprint('[]')\n")
    with pytest.raises(
        ToolLoadError, match="bad shebang: interpreter /nonexistent/python3 not found"
    ):
        await FMT.declare(path, ctx_for(tmp_path))


async def test_interpreter_missing_from_path(tmp_path: Path) -> None:
    path = tmp_path / "tool"
    path.write_text("#!/usr/bin/env kep-no-such-interpreter\n")
    path.chmod(0o755)
    with pytest.raises(
        ToolLoadError, match="no interpreter: #!/usr/bin/env kep-no-such-interpreter"
    ):
        await FMT.declare(path, ctx_for(tmp_path))


async def test_nonzero_exit_reports_code_and_stderr_tail(tmp_path: Path) -> None:
    path = sh_tool(tmp_path / "tool", "  echo 'line 1' >&2; echo 'boom: no config' >&2; exit 3")
    with pytest.raises(ToolLoadError) as e:
        await FMT.declare(path, ctx_for(tmp_path))
    assert str(e.value) == "--list-functions failed (exit code 3): line 1 | boom: no config"


async def test_lister_runs_in_project_root_and_declares_specs(tmp_path: Path) -> None:
    path = sh_tool(
        tmp_path / "prompts" / "functions" / "tool", '  pwd > lister.cwd; ' + one_def("t").strip()
    )  # (written in the cwd: the tool folder is read-only inside the sandbox)
    specs = await FMT.declare(path, ctx_for(tmp_path))
    assert (tmp_path / "lister.cwd").read_text().strip() == str(tmp_path)
    (spec,) = specs
    assert (spec.name, spec.format, spec.source) == ("t", "keprompt", str(path))
    inv = FMT.invocation(spec, {"x": "é"}, ctx_for(tmp_path))
    assert inv.argv == [str(path), "t"]
    assert json.loads(inv.stdin or b"") == {"x": "é"}
