"""A quick proof that a tool's parameter schema is valid, without importing jsonschema.

Checking a schema against the Draft 2020-12 meta-schema with jsonschema costs 1-2 ms and its
import costs more than a whole warm start; most tools declare plain schemas (objects, strings,
enums, arrays, descriptions). `plainly_valid` walks such a schema and answers True only when
every keyword the meta-schema constrains was checked here and passed. Anything else (a `$ref`,
`$defs`, patternProperties, an odd value, a very deep schema) answers False, and the caller asks
jsonschema, which also words the error. So a False costs time, never a wrong verdict.
"""

from __future__ import annotations

import re
from typing import Any

MAX_DEPTH = 48
SIMPLE_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
ONE_SCHEMA = frozenset({
    "items", "contains", "additionalProperties", "propertyNames", "if", "then", "else", "not",
    "unevaluatedItems", "unevaluatedProperties", "contentSchema",
})
SCHEMA_MAPS = frozenset({"properties", "dependentSchemas", "definitions"})
SCHEMA_LISTS = frozenset({"prefixItems", "allOf", "anyOf", "oneOf"})
NUMBERS = frozenset({"maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"})
COUNTS = frozenset({
    "maxLength", "minLength", "maxItems", "minItems", "maxContains", "minContains",
    "maxProperties", "minProperties",
})
STRINGS = frozenset({
    "title", "description", "$comment", "format", "contentEncoding", "contentMediaType",
})
BOOLEANS = frozenset({"uniqueItems", "deprecated", "readOnly", "writeOnly"})
ANYTHING = frozenset({"const", "default"})
ARRAYS = frozenset({"enum", "examples"})


def _is_number(v: Any) -> bool:
    return type(v) is int or (type(v) is float and v == v and abs(v) != float("inf"))


def _is_count(v: Any) -> bool:
    if type(v) is float and v == v and abs(v) != float("inf") and v.is_integer():
        v = int(v)
    return type(v) is int and v >= 0


def _string_set(v: Any) -> bool:
    return (
        type(v) is list and all(type(s) is str for s in v) and len(set(v)) == len(v)
    )


def _type_ok(v: Any) -> bool:
    if type(v) is str:
        return v in SIMPLE_TYPES
    return type(v) is list and bool(v) and _string_set(v) and all(t in SIMPLE_TYPES for t in v)


def _keyword_ok(key: str, value: Any, depth: int) -> bool:
    if key in ONE_SCHEMA:
        return _schema_ok(value, depth)
    if key in SCHEMA_MAPS:
        return type(value) is dict and all(_schema_ok(s, depth) for s in value.values())
    if key in SCHEMA_LISTS:
        return type(value) is list and bool(value) and all(_schema_ok(s, depth) for s in value)
    if key == "type":
        return _type_ok(value)
    if key in STRINGS:
        return type(value) is str
    if key in ANYTHING:
        return True
    if key in ARRAYS:
        return type(value) is list
    if key in BOOLEANS:
        return type(value) is bool
    if key in NUMBERS:
        return _is_number(value)
    if key in COUNTS:
        return _is_count(value)
    if key == "multipleOf":
        return _is_number(value) and value > 0
    if key == "required":
        return _string_set(value)
    if key == "dependentRequired":
        return type(value) is dict and all(_string_set(v) for v in value.values())
    if key == "dependencies":
        return type(value) is dict and all(
            _string_set(v) if type(v) is list else _schema_ok(v, depth) for v in value.values()
        )
    if key == "pattern":
        if type(value) is not str:
            return False
        try:
            re.compile(value)  # the meta-schema's "regex" format, as jsonschema checks it
        except (re.error, RecursionError, OverflowError, ValueError):
            return False
        return True
    # $id, $ref, $defs, $anchor, patternProperties …: jsonschema's job. Other keywords are
    # not constrained by the meta-schema: any value passes there, so here too.
    return not key.startswith("$") and key != "patternProperties"


def _schema_ok(schema: Any, depth: int) -> bool:
    if type(schema) is bool:
        return True
    if type(schema) is not dict or depth >= MAX_DEPTH:
        return False
    return all(
        type(k) is str and _keyword_ok(k, v, depth + 1) for k, v in schema.items()
    )


def plainly_valid(schema: Any) -> bool:
    """True: `schema` certainly satisfies the 2020-12 meta-schema. False: ask jsonschema."""
    return _schema_ok(schema, 0)
