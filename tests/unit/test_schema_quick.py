"""The quick schema proof (tools/schema_quick.py) never accepts what jsonschema rejects.

A differential test: thousands of generated schemas, valid and subtly broken, each checked by
both. The quick path may decline (then jsonschema decides), but a True from it must be a
schema the meta-schema accepts, and plain real-world schemas must take the quick path.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from tuiapp.tools.schema import schema_error
from tuiapp.tools.schema_quick import plainly_valid


def jsonschema_accepts(schema: Any) -> bool:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return False
    return True


ODD_VALUES: list[Any] = [
    None, True, False, 0, 1, -1, 1.0, 2.5, -0.5, float("nan"), float("inf"), "", "x",
    "\t", "a\nb", "[", "(?P<x", "^[a-z]+$", [], ["a"], ["a", "a"], [1], {}, {"type": "string"},
    "\udcff", "\x1b[31m", "x" * 3000,
]
KEYWORDS = [
    "type", "properties", "required", "items", "additionalProperties", "enum", "const",
    "default", "description", "title", "minimum", "maximum", "exclusiveMinimum", "multipleOf",
    "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "pattern", "format",
    "anyOf", "oneOf", "allOf", "not", "if", "then", "else", "prefixItems", "contains",
    "dependentRequired", "dependentSchemas", "dependencies", "definitions", "examples",
    "deprecated", "readOnly", "writeOnly", "$comment", "$ref", "$defs", "$id", "$schema",
    "patternProperties", "propertyNames", "minProperties", "maxContains", "contentSchema",
    "x-custom", "unevaluatedProperties",
]


def good_schema(rng: random.Random, depth: int = 0) -> Any:
    if depth > 3 or rng.random() < 0.15:
        return rng.choice([True, False, {}, {"type": "string"}, {"type": ["string", "null"]}])
    kind = rng.choice(["object", "array", "string", "number", "integer", "boolean", "union"])
    s: dict[str, Any] = {"description": rng.choice(["a thing", "", "multi\nline"])}
    if kind == "object":
        props = {f"p{i}": good_schema(rng, depth + 1) for i in range(rng.randint(0, 4))}
        s.update(type="object", properties=props)
        if props and rng.random() < 0.7:
            s["required"] = rng.sample(sorted(props), rng.randint(1, len(props)))
        if rng.random() < 0.5:
            s["additionalProperties"] = rng.choice([False, True, good_schema(rng, depth + 1)])
    elif kind == "array":
        s.update(type="array", items=good_schema(rng, depth + 1))
        if rng.random() < 0.5:
            s.update(minItems=rng.choice([0, 1, 2.0]), uniqueItems=rng.random() < 0.5)
    elif kind == "string":
        s["type"] = "string"
        if rng.random() < 0.4:
            s["enum"] = ["a", "b", 3]
        if rng.random() < 0.3:
            s["pattern"] = rng.choice(["^[a-z]+$", r"\d{3}", ".*"])
        if rng.random() < 0.3:
            s.update(minLength=1, maxLength=80, format="uri")
    elif kind in ("number", "integer"):
        s.update(type=kind, minimum=rng.choice([0, -5, 0.5]), maximum=100)
        if rng.random() < 0.3:
            s["multipleOf"] = rng.choice([1, 0.5])
    elif kind == "boolean":
        s.update(type="boolean", default=rng.random() < 0.5)
    else:
        s[rng.choice(["anyOf", "oneOf", "allOf"])] = [
            good_schema(rng, depth + 1) for _ in range(rng.randint(1, 3))
        ]
    return s


def mutate(rng: random.Random, schema: Any) -> Any:
    """One random keyword somewhere set to a random (often wrong) value."""
    if not isinstance(schema, dict):
        return {rng.choice(KEYWORDS): rng.choice(ODD_VALUES)}
    props = schema.get("properties")
    subs = [v for v in props.values() if isinstance(v, dict)] if isinstance(props, dict) else []
    if subs and rng.random() < 0.5:
        mutate(rng, rng.choice(subs))
    else:
        schema[rng.choice(KEYWORDS)] = rng.choice(ODD_VALUES)
    return schema


@pytest.mark.slow
def test_quick_path_never_accepts_what_jsonschema_rejects() -> None:
    rng = random.Random(16)
    accepted = rejected_by_both = 0
    for _ in range(3000):
        schema = good_schema(rng)
        if rng.random() < 0.7:
            for _ in range(rng.randint(1, 3)):
                schema = mutate(rng, schema)
        if plainly_valid(schema):
            accepted += 1
            assert jsonschema_accepts(schema), json.dumps(schema, default=str)[:500]
        elif not jsonschema_accepts(schema):
            rejected_by_both += 1
    # Both directions were exercised: many proofs, many real errors left to jsonschema.
    assert accepted > 800 and rejected_by_both > 800, (accepted, rejected_by_both)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"n": {"type": "array", "maxItems": -1}}},
        {"type": "object", "required": ["a", "a"]},  # not unique
        {"type": "object", "properties": {"a": {"type": "strin"}}},
        {"type": "object", "properties": {"a": {"pattern": "(unclosed"}}},
        {"type": "object", "properties": {"a": {"minLength": -1}}},
        {"type": "object", "properties": {"a": {"minLength": 1.5}}},
        {"type": "object", "properties": {"a": {"minLength": True}}},
        {"type": "object", "properties": {"a": {"maximum": "10"}}},
        {"type": "object", "properties": {"a": {"multipleOf": 0}}},
        {"type": "object", "properties": {"a": {"anyOf": []}}},
        {"type": "object", "properties": {"a": {"type": []}}},
        {"type": "object", "properties": {"a": {"type": ["string", "string"]}}},
        {"type": "object", "properties": {"a": {"enum": "abc"}}},
        {"type": "object", "properties": {"a": {"description": 5}}},
        {"type": "object", "properties": {"a": 5}},
        {"type": "object", "properties": ["a"]},
        {"type": "object", "additionalProperties": "no"},
        {"type": "object", "dependentRequired": {"a": ["b", "b"]}},
    ],
)
def test_broken_schemas_get_jsonschemas_message(schema: dict[str, Any]) -> None:
    assert not plainly_valid(schema)
    problem = schema_error(schema)
    assert problem is not None and problem.startswith("invalid schema")


def test_plain_tool_schemas_take_the_quick_path() -> None:
    typical = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "file to read", "minLength": 1},
            "mode": {"type": "string", "enum": ["r", "w"], "default": "r"},
            "lines": {"type": ["integer", "null"], "minimum": 0, "maximum": 1e6},
            "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"},
                     "uniqueItems": True, "maxItems": 20.0},
            "opts": {"type": "object", "additionalProperties": {"type": "boolean"}},
            "either": {"anyOf": [{"type": "string"}, {"type": "number"}]},
        },
        "required": ["path"],
        "additionalProperties": False,
        "x-vendor": {"anything": [1, None]},  # not a keyword: the meta-schema allows any value
    }
    assert plainly_valid(typical) and schema_error(typical) is None
    # Deep nesting and references are left to jsonschema (and still answered).
    deep: dict[str, Any] = {"type": "object"}
    node = deep
    for _ in range(60):
        node["properties"] = {"x": {"type": "object"}}
        node = node["properties"]["x"]
    assert not plainly_valid(deep) and schema_error(deep) is None
    ref = {"type": "object", "$defs": {"a": {"type": "string"}},
           "properties": {"x": {"$ref": "#/$defs/a"}}}
    assert not plainly_valid(ref) and schema_error(ref) is None
    assert schema_error({"type": "object", "properties": {"x": {"$ref": "#/nowhere"}}})
