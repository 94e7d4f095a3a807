"""Extension packs (FORMATS.md §4): *_tool.py modules imported in a child (registered in
sys.modules first), schemas from signatures, one failing import breaking only its file,
results normalised, the Light Schema byte-exact, SYSTEM_PROMPT exposed for the system prompt."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from formats_util import (
    by_name,
    copy_fixture,
    declarations,
    declare_all,
    golden,
    make_ctx,
    run_call,
)

from tuiapp.project.system_prompt import pack_sections
from tuiapp.tools.formats.base import ToolLoadError
from tuiapp.tools.formats.extensions import ExtensionFormat, light_schema

FMT = ExtensionFormat()

LIGHT_SCHEMA = (
    "Notes — Manage project notes and milestones.\n"
    '- NOTES_UPDATE_project_note: Append content to today\'s note entry for a project. EX: '
    '"Example Prompt: add "ship MVP" under "Milestones" for project Eco AI"\n'
    '- NOTES_GET_projects: List the projects. EX: "Example Prompt: what projects do I have?"\n'
    "- NOTES_ACTION_count: Count the words (an async tool; `words` has no annotation).\n"
    "\n"
    "Weather\n"
    "- WEATHER_GET_now: Current weather for a city."
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return copy_fixture("extensions", tmp_path)


# Its module-scoped fixture is built once: the module's tests share a parallel worker.
pytestmark = pytest.mark.xdist_group("format_extensions")


@pytest.fixture(scope="module")
def declared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """One copy declared once for the tests that only read it (each pack costs a child)."""
    shared = copy_fixture("extensions", tmp_path_factory.mktemp("ext"))
    return shared, asyncio.run(declare_all(FMT, make_ctx(shared)))


def test_declarations_match_golden_and_one_bad_import_breaks_one_file(declared: Any) -> None:
    _, found = declared
    assert declarations(found) == golden("extensions/golden.json")
    assert "extensions/plain/helpers.py" not in found  # only *_tool.py files are packs


def test_light_schema_is_byte_exact(declared: Any) -> None:
    specs = list(by_name(declared[1]).values())
    assert light_schema(specs) == LIGHT_SCHEMA
    assert light_schema(sorted(specs, key=lambda s: s.name)) == LIGHT_SCHEMA  # order-proof


def test_system_prompt_of_each_pack_once(declared: Any) -> None:
    specs = list(by_name(declared[1]).values())
    assert [s.run["system_prompt"] for s in specs if s.name.startswith("NOTES")] == [
        "Manage project notes and milestones.\nAlways name the project you touched."] * 3
    # the prompt builder (core.system_prompt) adds it once per pack; Weather's is empty
    assert pack_sections(specs) == [
        "## Notes\n\nManage project notes and milestones.\nAlways name the project you touched."]


async def test_results_are_normalised(declared: Any) -> None:
    root, found = declared
    specs = by_name(found)
    ran = await run_call(FMT, specs["NOTES_UPDATE_project_note"],
                         {"project_id": "Eco AI", "content": "ship", "priority": "high"}, root)
    assert ran.status == "ok", ran.result
    # a pydantic model: JSON of model_dump()
    assert ran.result == '{"project_id": "Eco AI", "appended": true, "priority": "high"}'
    ran = await run_call(FMT, specs["NOTES_GET_projects"], {"limit": 1}, root)
    assert json.loads(ran.result) == {"projects": ["Eco AI"], "tags": None}  # dict → JSON
    ran = await run_call(FMT, specs["NOTES_ACTION_count"],
                         {"words": "a b c", "section": {"title": "T"}}, root)
    assert ran.result == "(3, 'T')"  # async, a dict argument made into its pydantic model, str()
    ran = await run_call(FMT, specs["WEATHER_GET_now"], {"city": "Rome"}, root)
    assert ran.result == "sunny in Rome"


async def test_a_tool_that_raises_fails_with_its_traceback(declared: Any) -> None:
    root, found = declared
    specs = by_name(found)
    ran = await run_call(FMT, specs["NOTES_UPDATE_project_note"],
                         {"project_id": "x", "content": "y", "priority": "urgent"}, root)
    assert ran.status == "failed"
    assert "ValueError: 'urgent' is not a valid Priority" in ran.result


async def test_a_pack_fixed_on_disk_recovers(root: Path) -> None:
    path = root / "extensions" / "incomplete" / "incomplete_tool.py"
    ctx = make_ctx(root)
    with pytest.raises(ToolLoadError, match="not an extension pack: no TOOLS"):
        await FMT.declare(path, ctx)
    path.write_text(path.read_text() + "\ndef INC_do() -> str:\n    \"\"\"Do.\"\"\"\n"
                    "    return 'x'\n\nTOOLS = [INC_do]\n")
    [spec] = await FMT.declare(path, ctx)
    assert (spec.name, spec.run["pack"], spec.run["system_prompt"]) == ("INC_do", "Incomplete",
                                                                         "Has no TOOLS.")
