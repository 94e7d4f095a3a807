"""AITool classes (FORMATS.md §5): found in configured paths by duck typing, in a child; calls
validated with jsonschema, sync or async `execute`, `execute(**args)` or
`execute(arguments=args)`, `{"error": …}` results reported as tool errors."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from formats_util import (
    by_name,
    copy_fixture,
    declarations,
    declare_all,
    golden,
    make_config,
    make_ctx,
    run_call,
)

from tuiapp.project.system_prompt import aitool_sections
from tuiapp.tools.formats.aitool import AIToolFormat, resolve_source

FMT = AIToolFormat()
SOURCES = {"sources": [{"format": "aitool", "path": "mytools"}]}


# Its module-scoped fixture is built once: the module's tests share a parallel worker.
pytestmark = pytest.mark.xdist_group("format_aitool")


@pytest.fixture(scope="module")
def declared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = copy_fixture("aitool", tmp_path_factory.mktemp("ait"))
    return root, asyncio.run(declare_all(FMT, make_ctx(root, SOURCES)))


def test_declarations_match_golden(declared: Any) -> None:
    found = declared[1]
    assert declarations(found) == golden("aitool/golden.json")
    assert found["mytools/base.py"] == []  # the abstract base is not a tool
    assert found["mytools/helpers.py"] == []  # no AITool class: nothing, and no error
    read = by_name(found)["read_file"]
    assert (read.run["category"], read.run["tags"]) == ("File", ["file", "read"])


def test_instructions_go_to_the_system_prompt(declared: Any) -> None:
    specs = by_name(declared[1])
    assert specs["calc"].run["system_prompt"] == "Use calc for arithmetic."
    assert aitool_sections(specs.values()) == [
        "## calc\n\nUse calc for arithmetic.",
        "## read_file\n\n**Tool: `read_file`** Use it to read a text file."]


def test_sources_may_be_files_dirs_or_module_names(tmp_path: Path) -> None:
    root = copy_fixture("aitool", tmp_path)
    assert resolve_source("mytools", root) == root / "mytools"
    assert resolve_source("mytools.calc_tool", root) == root / "mytools" / "calc_tool.py"
    assert resolve_source("mytools/calc_tool.py", root) == root / "mytools" / "calc_tool.py"
    assert resolve_source("nowhere.at_all", root) is None
    ctx = make_ctx(root, {"sources": [{"format": "aitool", "path": "mytools.calc_tool"}]})
    assert [list(FMT.candidates(r)) for r in FMT.roots(ctx)] == [[root / "mytools/calc_tool.py"]]


async def test_async_execute_with_keyword_arguments(declared: Any) -> None:
    root, found = declared
    (root / "hello.txt").write_text("hello file")
    ran = await run_call(FMT, by_name(found)["read_file"], {"path": "hello.txt"}, root)
    assert (ran.status, ran.result) == ("ok", "hello file")


async def test_error_results_are_tool_errors(declared: Any) -> None:
    root, found = declared
    specs = by_name(found)
    ran = await run_call(FMT, specs["read_file"], {"path": "missing.txt"}, root)  # JSON text
    assert ran.status == "failed"
    assert "File not found: missing.txt" in ran.result
    ran = await run_call(FMT, specs["calc"], {"op": "div", "a": 1, "b": 0}, root)  # a dict
    assert ran.status == "failed"
    assert "division by zero" in ran.result


async def test_execute_taking_an_arguments_dict(declared: Any) -> None:
    root, found = declared
    ran = await run_call(FMT, by_name(found)["calc"], {"op": "div", "a": 1, "b": 4}, root)
    assert (ran.status, ran.result) == ("ok", '{"result": 0.25}')


async def test_arguments_are_validated_before_the_call(declared: Any) -> None:
    root, found = declared
    ran = await run_call(FMT, by_name(found)["calc"], {"op": "mul", "a": 1}, root,
                         make_config(root, SOURCES))
    assert ran.status == "failed"
    assert "invalid arguments" in ran.result
    assert "'b' is a required property" in ran.result


async def test_unusable_classes_are_broken_with_a_reason(tmp_path: Path) -> None:
    root = copy_fixture("aitool_broken", tmp_path)
    found = await declare_all(FMT, make_ctx(root, {"sources": [{"format": "aitool", "path": "."}]}))
    assert declarations(found) == golden("aitool_broken/golden.json")
