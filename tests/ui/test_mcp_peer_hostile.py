"""Every string field an MCP server sends to the resources screen, the template form and the
elicitation form, one at a time made hostile (markup, ESC, BEL, a link): shown as text, no
control character reaches the terminal, no markup is read. The fields are taken from the
dataclasses and the schema, not from a list written here."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest
from textual.app import App

from tuiapp.mcp.peer import ElicitationRequest
from tuiapp.mcp.resources import Catalog, ResourceItem, TemplateItem

MARK = "[b]F{}[/b]"
EVIL = " \x1b[31m\x07[link=https://evil.example]x[/link][@click=app.quit]q[/]"


def hostile(n: int) -> str:
    return MARK.format(n) + EVIL


class Host(App[None]):
    def __init__(self, catalogs: dict[str, Catalog]) -> None:
        super().__init__()
        self.ws = SimpleNamespace(mcp=SimpleNamespace(catalogs=lambda: catalogs))


def text_of(app: App[Any]) -> str:
    return "\n".join(s.text for s in app.screen._compositor.render_strips())


async def shown_when_drawn(pilot: Any, app: App[Any], n: int) -> str:
    """The screen once the marker is drawn (or after 5 s: then the check says what is shown)."""
    for _ in range(100):
        text = text_of(app)
        if MARK.format(n)[:6] in text:
            return text
        await pilot.pause(0.05)
    return text_of(app)


def check(shown: str, n: int) -> None:
    assert "\x1b" not in shown and "\x07" not in shown
    assert MARK.format(n)[:6] in shown  # the markup itself, as text (cut lines keep its start)


def string_fields(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if f.type in ("str", str)]


@pytest.mark.parametrize("cls", [ResourceItem, TemplateItem])
async def test_every_string_field_on_the_resources_screen(cls: type) -> None:
    from tuiapp.ui.screens.resources import ResourcesScreen

    base: dict[str, Any] = {"server": "s", "uri": "u://a", "uri_template": "u://{a}",
                            "name": "n", "description": "d", "mime": "m"}
    names = [f for f in string_fields(cls) if f != "mime"]  # mime is not shown
    for n, field in enumerate(names):
        kw = {k: v for k, v in base.items() if k in string_fields(cls)}
        kw[field] = hostile(n)
        item = cls(**kw)
        cat = Catalog(resources=(item,)) if cls is ResourceItem else Catalog(templates=(item,))
        app = Host({kw["server"]: cat})
        async with app.run_test(size=(200, 30)) as pilot:
            app.push_screen(ResourcesScreen(app))  # type: ignore[arg-type]
            check(await shown_when_drawn(pilot, app, n), n)
            assert app.is_running  # [@click=app.quit] did nothing


async def test_every_string_of_a_template_on_its_form() -> None:
    from tuiapp.ui.screens.resources import TemplateScreen

    for n, field in enumerate(["uri_template", "description", "server"]):
        kw = {"server": "s", "uri_template": "u://{a}", "name": "t", "description": "d"}
        kw[field] = hostile(n) + ("{v}" if field == "uri_template" else "")
        app = Host({})
        async with app.run_test(size=(120, 30)) as pilot:
            app.push_screen(TemplateScreen(TemplateItem(**kw)))
            check(await shown_when_drawn(pilot, app, n), n)


def schema_strings(schema: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """The schema once per string in it, that string made hostile: property names, titles,
    descriptions, enum values."""
    out = []
    props = schema["properties"]
    for name in props:
        for key in [k for k, v in props[name].items() if isinstance(v, str) and k != "type"]:
            s = {"type": "object", "properties": {k: dict(v) for k, v in props.items()}}
            s["properties"][name][key] = hostile(n)
            out.append(s)
        for i, v in enumerate(props[name].get("enum", [])):
            if isinstance(v, str):
                s = {"type": "object", "properties": {k: dict(v) for k, v in props.items()}}
                s["properties"][name]["enum"] = list(props[name]["enum"])
                s["properties"][name]["enum"][i] = hostile(n)
                out.append(s)
        s = {"type": "object", "properties": {hostile(n) if k == name else k: v
                                              for k, v in props.items()}}
        out.append(s)
    return out


SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string", "title": "Name", "description": "who"},
    "colour": {"type": "string", "enum": ["red", "green"], "description": "pick"},
    "ok": {"type": "boolean", "description": "agree"}}}


async def test_every_string_of_an_elicitation_is_shown_as_text() -> None:
    from textual.widgets import Select

    from tuiapp.ui.screens.elicitation import ElicitationScreen

    requests = [ElicitationRequest(hostile(0), "m", "form", SCHEMA),
                ElicitationRequest("s", hostile(0), "form", SCHEMA),
                ElicitationRequest("s", "m", "url", url="https://x.example/" + hostile(0)),
                *[ElicitationRequest("s", "m", "form", s) for s in schema_strings(SCHEMA, 0)]]
    for req in requests:
        app = Host({})
        async with app.run_test(size=(200, 50)) as pilot:
            app.push_screen(ElicitationScreen(req))
            await pilot.pause(0.3)
            shown = text_of(app)
            selects = list(app.screen.query(Select))
            if MARK.format(0)[:6] not in shown and selects:  # an enum value: open the list
                selects[0].focus()
                await pilot.press("enter")
                shown = await shown_when_drawn(pilot, app, 0)
            else:
                shown = await shown_when_drawn(pilot, app, 0)
            assert "\x1b" not in shown and "\x07" not in shown, req
            assert MARK.format(0)[:6] in shown, req
            assert app.is_running
