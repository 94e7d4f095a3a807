"""A form generated from a tool's JSON schema (the workbench's arguments).

strings → Input; integers and numbers → Input restricted to numbers, bounds in the label and
checked; booleans → Checkbox; enums → Select of the choices; arrays, objects and anything
else → an Input taking JSON, checked when read. Defaults are filled in, required fields are
marked with *. `read()` gives the arguments or the first problem, naming the field.
"""

from __future__ import annotations

import json
from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Checkbox, Input, Label, Select

from tuiapp.ui.literal import literal, say

NO_VALUE = Select.NULL  # an enum left unset
# A form of hundreds of fields takes seconds to build and nobody fills it in: past this many
# parameters the rest go into one JSON object field ("more arguments").
MAX_FIELDS = 40


def _type(schema: dict[str, Any]) -> str:
    t = schema.get("type")
    if isinstance(t, list):  # ["string", "null"]: the first real type
        t = next((x for x in t if x != "null"), "string")
    return t if isinstance(t, str) else ("string" if "enum" not in schema else "enum")


def _bounds(schema: dict[str, Any]) -> str:
    lo = schema.get("minimum", schema.get("exclusiveMinimum"))
    hi = schema.get("maximum", schema.get("exclusiveMaximum"))
    if lo is None and hi is None:
        return ""
    return f" [{'' if lo is None else lo}..{'' if hi is None else hi}]"


class SchemaForm(Widget):
    DEFAULT_CSS = """
    SchemaForm { height: auto; }
    SchemaForm Label { margin: 1 0 0 0; }
    SchemaForm Label.-required { text-style: bold; }
    SchemaForm .schema-form--help { color: $text-muted; }
    SchemaForm Input, SchemaForm Select { width: 1fr; }
    """

    def __init__(self, parameters: dict[str, Any], values: dict[str, Any] | None = None,
                 *, id: str | None = None) -> None:
        super().__init__(id=id)
        params = parameters if isinstance(parameters, dict) else {}
        props = params.get("properties")
        self.properties: dict[str, dict[str, Any]] = {
            k: (v if isinstance(v, dict) else {}) for k, v in (props or {}).items()
        } if isinstance(props, dict) else {}
        req = params.get("required")
        self.required = set(req) if isinstance(req, list) else set()
        self.initial = values or {}
        names = list(self.properties)
        self.extra = names[MAX_FIELDS:]  # parameters without a field of their own
        self.properties = {k: self.properties[k] for k in names[:MAX_FIELDS]}

    def compose(self) -> ComposeResult:
        if not self.properties:
            yield Label("(no parameters)")
            return
        for i, (name, schema) in enumerate(self.properties.items()):
            kind = _type(schema)
            mark = " *" if name in self.required else ""
            title = schema.get("title")  # an MCP elicitation's field title, when it has one
            label = (say("{} · {}{}  ({}{})", title, name, mark, kind, _bounds(schema))
                     if isinstance(title, str) and title.strip()
                     else say("{}{}  ({}{})", name, mark, kind, _bounds(schema)))
            yield Label(label, classes="-required" if mark else "")
            desc = str(schema.get("description", "")).strip()
            if desc:
                yield Label(literal(desc), classes="schema-form--help")
            with Vertical(classes="schema-form--field"):
                yield self._field(i, name, schema, kind)
        if self.extra:
            req = [n for n in self.extra if n in self.required]
            yield Label(say("more arguments ({} parameters: {}…) as a JSON object{}",
                            len(self.extra), ", ".join(self.extra[:5]),
                            f"; required: {', '.join(req[:5])}" if req else ""))
            start = {k: self.initial[k] for k in self.extra if k in self.initial}
            yield Input(json.dumps(start) if start else "", id="field-extra",
                        placeholder='JSON object, e.g. {"name": "value"}')

    def _value(self, name: str, schema: dict[str, Any]) -> Any:
        return self.initial.get(name, schema.get("default"))

    def _field(self, i: int, name: str, schema: dict[str, Any], kind: str) -> Widget:
        fid = f"field-{i}"
        value = self._value(name, schema)
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            # A choice is foreign text (an MCP server's enum): shown, never read as markup.
            options = [(literal(v if isinstance(v, str) else json.dumps(v), line=True), j)
                       for j, v in enumerate(enum)]
            start = enum.index(value) if value in enum else NO_VALUE
            return Select(options, value=start, id=fid, allow_blank=True)
        if kind == "boolean":
            return Checkbox(literal(name, line=True), bool(value), id=fid)
        if kind in ("integer", "number"):
            text = "" if value is None else str(value)
            return Input(text, type=kind, id=fid, placeholder=kind)
        if kind == "string":
            return Input("" if value is None else str(value), id=fid,
                         placeholder="text")
        text = "" if value is None else json.dumps(value)
        return Input(text, id=fid, placeholder=f"JSON {kind}")

    def set_values(self, values: dict[str, Any]) -> None:
        """Fill the fields from a run's arguments (a re-run, an earlier run picked)."""
        if self.extra:
            more = {k: values[k] for k in self.extra if k in values}
            self.query_one("#field-extra", Input).value = json.dumps(more) if more else ""
        for i, (name, schema) in enumerate(self.properties.items()):
            widget = self.query_one(f"#field-{i}")
            value = values.get(name)
            if isinstance(widget, Select):
                enum = schema.get("enum") or []
                widget.value = enum.index(value) if value in enum else NO_VALUE
            elif isinstance(widget, Checkbox):
                widget.value = bool(value)
            elif isinstance(widget, Input):
                kind = _type(schema)
                if value is None:
                    widget.value = ""
                elif kind in ("string", "integer", "number"):
                    widget.value = str(value)
                else:
                    widget.value = json.dumps(value)

    def read(self) -> tuple[dict[str, Any], str | None]:
        """(arguments, None), or ({}, "field: what is wrong")."""
        out: dict[str, Any] = {}
        if self.extra:
            text = self.query_one("#field-extra", Input).value
            if text.strip():
                try:
                    more = self._parse(text, "object")
                except ValueError as e:
                    return {}, f"more arguments: {e}"
                out.update({k: v for k, v in more.items() if k not in self.properties})
        for i, (name, schema) in enumerate(self.properties.items()):
            widget = self.query_one(f"#field-{i}")
            kind = _type(schema)
            if isinstance(widget, Select):
                if widget.value is NO_VALUE or widget.value is Select.BLANK:
                    if name in self.required:
                        return {}, f"{name}: pick one of the choices"
                    continue
                out[name] = schema["enum"][int(widget.value)]  # type: ignore[arg-type]
                continue
            if isinstance(widget, Checkbox):
                out[name] = widget.value
                continue
            assert isinstance(widget, Input)
            text = widget.value
            if not text.strip():
                if name in self.required:
                    return {}, f"{name}: required"
                continue
            try:
                value = self._parse(text, kind)
            except ValueError as e:
                return {}, f"{name}: {e}"
            problem = _out_of_bounds(value, schema)
            if problem:
                return {}, f"{name}: {problem}"
            out[name] = value
        return out, None

    @staticmethod
    def _parse(text: str, kind: str) -> Any:
        if kind == "string":
            return text
        if kind == "integer":
            try:
                return int(text.strip())
            except ValueError:
                raise ValueError(f"not an integer: {text[:40]!r}") from None
        if kind == "number":
            try:
                n = float(text.strip())
            except ValueError:
                raise ValueError(f"not a number: {text[:40]!r}") from None
            return int(n) if n.is_integer() and "." not in text and "e" not in text.lower() \
                else n
        try:
            value = json.loads(text)
        except RecursionError:
            raise ValueError("nested too deeply") from None
        except json.JSONDecodeError as e:
            raise ValueError(f"not valid JSON: {e.msg} at col {e.colno}") from None
        want = {"array": list, "object": dict}.get(kind)
        if want is not None and not isinstance(value, want):
            raise ValueError(f"expected a JSON {kind}")
        return value


def _out_of_bounds(value: Any, schema: dict[str, Any]) -> str | None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if isinstance(lo, int | float) and value < lo:
        return f"must be ≥ {lo}"
    if isinstance(hi, int | float) and value > hi:
        return f"must be ≤ {hi}"
    xlo, xhi = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if isinstance(xlo, int | float) and value <= xlo:
        return f"must be > {xlo}"
    if isinstance(xhi, int | float) and value >= xhi:
        return f"must be < {xhi}"
    return None
