"""The MCP servers' resources and resource templates: pick one to attach it to the next
message (enter), fill in a template's variables first (a form), or subscribe to a resource's
updates (s). Opened from the functions panel (r) or the palette ("MCP: resources").

Names, descriptions and URIs are the servers' text: shown literally, one line each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, OptionList
from textual.widgets.option_list import Option

from tuiapp.mcp.resources import ResourceItem, TemplateItem
from tuiapp.security.display import Foreign, foreign
from tuiapp.ui import resource_attach
from tuiapp.ui.literal import literal, say
from tuiapp.ui.widgets.schema_form import SchemaForm

if TYPE_CHECKING:
    from tuiapp.ui.app_api import KepApp

LINE = 80  # characters of a name, description or URI shown on a line; the rest counted


def one(text: str) -> Foreign:
    return foreign(text, line=True, limit=LINE)


def open_screen(app: KepApp) -> None:
    app.push_screen(ResourcesScreen(app))


class ResourcesScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    ResourcesScreen { align: center middle; }
    ResourcesScreen > Vertical { width: 95%; height: 90%; border: round $accent;
        background: $surface; padding: 0 1; }
    ResourcesScreen OptionList { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "close", id="resources_close"),
        Binding("s", "subscribe", "subscribe", id="resources_subscribe"),
    ]

    def __init__(self, app: KepApp) -> None:
        super().__init__()
        self.kep = app
        self.items: dict[str, ResourceItem | TemplateItem] = {}

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("MCP resources · enter: attach to the next message · s: subscribe · "
                        "esc: close", id="resources-help")
            yield OptionList(*self._options(), id="resources-list")

    def _options(self) -> list[Option]:
        mcp = self.kep.ws.mcp
        options: list[Option] = []
        for server, cat in sorted((mcp.catalogs() if mcp else {}).items()):
            options.append(Option(say("{} · {} resources, {} templates", server,
                                      len(cat.resources), len(cat.templates)), disabled=True))
            for i, t in enumerate(cat.templates):
                oid = f"t:{server}:{i}"
                self.items[oid] = t
                row = say("  ⧉ {}  ({})  {}", one(t.name), one(t.uri_template),
                          one(t.description))
                options.append(Option(row, oid))
            for i, r in enumerate(cat.resources):
                oid = f"r:{server}:{i}"
                self.items[oid] = r
                row = say("  {}  ({})  {}", one(r.name), one(r.uri), one(r.description))
                options.append(Option(row, oid))
            if cat.more:
                options.append(Option(say("  … and {} more not listed", cat.more),
                                      disabled=True))
        if not options:
            options.append(Option("(no MCP server offers resources)", disabled=True))
        return options

    def _chosen(self) -> ResourceItem | TemplateItem | None:
        listing = self.query_one(OptionList)
        opt = listing.highlighted_option
        return self.items.get(opt.id or "") if opt else None

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        item = self.items.get(event.option.id or "")
        if isinstance(item, TemplateItem):
            self.app.push_screen(TemplateScreen(item), callback=self._filled)
        elif isinstance(item, ResourceItem):
            self._attach_resource(item.server, item.uri)

    def _filled(self, got: tuple[str, str] | None) -> None:
        if got is not None:
            self._attach_resource(*got)

    @work(group="mcp-resource", exit_on_error=False)
    async def _attach_resource(self, server: str, uri: str) -> None:
        await resource_attach.attach(self.kep, server, uri)

    @work(group="mcp-resource", exit_on_error=False)
    async def action_subscribe(self) -> None:
        item = self._chosen()
        if isinstance(item, ResourceItem):
            await resource_attach.subscribe(self.kep, item.server, item.uri)


class TemplateScreen(ModalScreen[tuple[str, str] | None]):
    """A resource template's variables as a form; gives (server, uri) filled in."""

    DEFAULT_CSS = """
    TemplateScreen { align: center middle; }
    TemplateScreen > Vertical { width: 90%; max-width: 100; height: auto; max-height: 90%;
        border: round $accent; background: $surface; padding: 0 1; }
    TemplateScreen Horizontal { height: auto; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "cancel", id="template_cancel"),
        Binding("ctrl+s", "done", "attach", id="template_attach")]

    def __init__(self, template: TemplateItem) -> None:
        super().__init__()
        self.template = template

    def compose(self) -> ComposeResult:
        t = self.template
        schema = {"type": "object", "required": list(t.variables),
                  "properties": {v: {"type": "string"} for v in t.variables}}
        with Vertical():
            yield Label(say("{}: {}", one(t.server), one(t.uri_template)))
            yield Label(literal(t.description, line=True, limit=LINE))
            yield SchemaForm(schema, id="template-form")
            yield Label("", id="template-problem")
            with Horizontal():
                yield Button("Attach (ctrl+s)", id="done", variant="primary")
                yield Button("Cancel (esc)", id="cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "done":
            self.action_done()
        else:
            self.dismiss(None)

    def action_done(self) -> None:
        values, problem = self.query_one(SchemaForm).read()
        if problem:
            self.query_one("#template-problem", Label).update(literal(problem, line=True))
            return
        self.dismiss((self.template.server, self.template.expand(
            {k: str(v) for k, v in values.items()})))
