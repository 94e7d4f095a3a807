"""Extension pack schemas as the pack's own host (luna) sends them (issue 15): a pydantic
model of the signature, $refs inlined, titles removed — Optional → anyOf [X, null] with
default null, other defaults kept, unions, Literal, Dict[str, Any] → additionalProperties
true, list[Model] and models; descriptions stripped; the Light Schema in discovery order."""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from formats_util import by_name, copy_fixture, declare_all, make_config, make_ctx, run_call

from tuiapp.tools.formats.extensions import ExtensionFormat, light_schema

FMT = ExtensionFormat()
HERE = Path(__file__).resolve().parents[2] / "tuiapp" / "tools" / "formats"

ADDRESS = {"type": "object", "properties": {
    "street": {"type": "string"}, "city": {"type": "string", "default": "Springfield"}},
    "required": ["street"]}
CONTACT = {"type": "object", "properties": {
    "name": {"type": "string"},
    "title": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
    "address": ADDRESS}, "required": ["name", "address"]}
EXPECTED = {
    "CRM_UPDATE_contact": {"type": "object", "properties": {
        "contact_id": {"type": "string"},
        "fields": {"type": "object", "additionalProperties": True},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "priority": {"type": "integer", "default": 3},
        "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                 "default": None}},
        "required": ["contact_id", "fields"]},
    "CRM_GET_deals": {"type": "object", "properties": {
        "stage": {"type": "string", "enum": ["open", "won", "lost"], "default": "open"},
        "limit": {"anyOf": [{"type": "integer"}, {"type": "string"}], "default": 10},
        "scores": {"type": "object", "additionalProperties": {"type": "integer"}, "default": {}},
        "raw": {"type": "object", "additionalProperties": True, "default": {}},
        "anything": {"default": None},
        "untyped": {"type": "string", "default": "x"}}},
    "CRM_ACTION_import": {"type": "object", "properties": {
        "contacts": {"type": "array", "items": CONTACT},
        "owner": CONTACT,
        "dry_run": {"type": "boolean", "default": False}},
        "required": ["contacts", "owner"]},
}


# Its module-scoped fixture is built once: the module's tests share a parallel worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("extension_luna_fidelity")]


@pytest.fixture(scope="module")
def declared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = copy_fixture("ext_luna", tmp_path_factory.mktemp("luna"))
    ctx = make_ctx(root, {"python": sys.executable})
    return root, asyncio.run(declare_all(FMT, ctx))


def test_schemas_match_what_luna_sends(declared: Any) -> None:
    _, found = declared
    specs = by_name(found)
    for name, schema in EXPECTED.items():
        assert specs[name].parameters == schema, name


def test_descriptions_are_the_stripped_docstring(declared: Any) -> None:
    specs = by_name(declared[1])
    desc = specs["CRM_ACTION_import"].description
    assert desc == "Import contacts.\n\nExample Prompt: import these three contacts"
    # luna strips the ends only: a summary line's trailing spaces inside stay
    assert specs["CRM_UPDATE_contact"].description.startswith("Update a contact's fields.   \n")


def test_without_pydantic_the_hand_mapping_gives_the_same_schemas() -> None:
    """kep's own mapping (used when the pack's interpreter has no pydantic) agrees with
    pydantic's for every parameter that is not a model."""
    spec = importlib.util.spec_from_file_location("kep_child_schema", HERE / "_child_schema.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    pack = importlib.util.spec_from_file_location(
        "crm_tool", Path(__file__).resolve().parents[1] / "fixtures" / "ext_luna" / "extensions"
        / "crm" / "crm_tool.py")
    assert pack and pack.loader
    crm = importlib.util.module_from_spec(pack)
    sys.modules["crm_tool"] = crm
    try:
        pack.loader.exec_module(crm)
        for fn in (crm.CRM_UPDATE_contact, crm.CRM_GET_deals):
            assert mod.manual_schema(fn) == mod.signature_schema(fn) == EXPECTED[fn.__name__]
        assert mod.manual_schema(crm.CRM_ACTION_import) == EXPECTED["CRM_ACTION_import"]
    finally:
        sys.modules.pop("crm_tool", None)


async def test_models_in_lists_reach_the_tool_as_models(declared: Any) -> None:
    root, found = declared
    spec = by_name(found)["CRM_ACTION_import"]
    ada = {"name": "Ada", "address": {"street": "1 Loop"}}
    bob = {"name": "Bob", "address": {"street": "2 Way", "city": "Shelbyville"}}
    ran = await run_call(FMT, spec, {"contacts": [bob, ada], "owner": ada}, root,
                         make_config(root, {"python": sys.executable}))
    assert (ran.status, ran.result) == ("ok", "2 contacts, first Bob of Shelbyville, for Ada")


def luna_light_schema(top: Path) -> str:
    """luna's own algorithm, restated: os.walk unsorted, every *_tool.py in walk order,
    `NAME — first line of SYSTEM_PROMPT.strip()`, `- tool: summary EX: "example"`."""
    sections = []
    sys.path.insert(0, str(top))
    try:
        for dirpath, _dirs, files in os.walk(top):
            for f in files:
                if not f.endswith("_tool.py"):
                    continue
                spec = importlib.util.spec_from_file_location(f[:-3], os.path.join(dirpath, f))
                assert spec and spec.loader
                mod = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(mod)
                prompt = mod.SYSTEM_PROMPT.strip()
                first = prompt.splitlines()[0].strip() if prompt else ""
                lines = [f"{mod.NAME.strip()} — {first}" if first else mod.NAME.strip()]
                for fn in mod.TOOLS:
                    doc = [ln.rstrip() for ln in (inspect.getdoc(fn) or "").splitlines()]
                    summary = doc[0].strip() if doc else ""
                    example = next((ln.strip() for ln in doc[1:] if ln.strip()), "")
                    entry = f"- {fn.__name__}: {summary}"
                    if example:
                        entry += f' EX: "{example}"'
                    lines.append(entry)
                sections.append("\n".join(lines))
    finally:
        sys.path.remove(str(top))
    return "\n\n".join(sections)


def test_light_schema_is_luna_byte_for_byte_in_discovery_order(declared: Any) -> None:
    root, found = declared
    specs = [s for v in found.values() if not isinstance(v, str) for s in v]
    expected = luna_light_schema(root / "extensions")
    assert light_schema(specs) == expected
    assert light_schema(list(reversed(specs))) == expected
    assert "CRM — Track contacts and deals." in expected  # SYSTEM_PROMPT starts with a newline
