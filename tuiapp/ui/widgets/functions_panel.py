"""The functions panel: every tool kep found, with format, source and status.

Broken tools are listed first, in the error colour, with the reason to fix. The app calls
`update_entries()` on every registry change; an unchanged list costs nothing, a changed one
rebuilds the option list (virtualised: only visible rows are rendered). MCP server states can be
shown above the tools with `update_servers()`.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

from textual.app import ComposeResult
from textual.content import Content
from textual.widget import Widget
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from tuiapp import paths
from tuiapp.core.display import printable, printable_line
from tuiapp.tools.model import BrokenTool, ToolSpec

Entry = ToolSpec | BrokenTool
# MCP server name → (state, detail): ("starting", ""), ("ready", "3 tools"),
# ("failed", "reason"), ("exited", "code 1").
ServerStates = Mapping[str, tuple[str, str]]

SERVER_STYLES = {"ready": "$text-success", "failed": "$text-error", "exited": "$text-warning",
                 "starting": "$text-accent"}


def short_source(source: str, root: Path | None) -> str:
    """A source as a person reads it: relative to the project, built-ins marked, ~ for home."""
    if source.startswith("mcp:"):
        return source
    try:
        builtin = paths.builtin_functions_dir()
        p = Path(source)
        if p.is_relative_to(builtin):
            return f"built-in/{p.relative_to(builtin)}"
        if root is not None and p.is_relative_to(root):
            return str(p.relative_to(root))
        home = Path(os.path.expanduser("~"))
        if p.is_relative_to(home) and home != Path("/"):
            return f"~/{p.relative_to(home)}"
    except (ValueError, OSError):
        pass
    return source


class FunctionsPanel(Widget):
    """A list of tools (ok and broken) and, optionally, MCP server states."""

    DEFAULT_CSS = """
    FunctionsPanel {
        width: 1fr;
        height: 1fr;
        & > .functions-panel--summary { height: auto; padding: 0 1; text-style: bold; }
        & > .functions-panel--servers { height: auto; padding: 0 1; }
        & > OptionList { height: 1fr; border: none; padding: 0; }
    }
    """

    def __init__(self, root: Path | None = None, *, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.root = root
        self.entries: list[Entry] = []
        self.servers: dict[str, tuple[str, str]] = {}
        self._key: tuple[object, ...] | None = None
        self._width = 1000  # wrap width for reasons; the real one arrives with on_resize
        self._stale = True  # entries changed since the list was last built

    def compose(self) -> ComposeResult:
        yield Static("Functions · none yet", classes="functions-panel--summary", markup=False)
        servers = Static("", classes="functions-panel--servers")
        servers.display = False
        yield servers
        yield OptionList(compact=True)

    def on_mount(self) -> None:
        if self.display:
            self._render_entries()
        self._render_servers()

    # ---- updates -----------------------------------------------------------------------

    def update_entries(self, entries: Sequence[Entry]) -> None:
        """Show this list of tools (the whole registry, not a diff)."""
        key = tuple(_entry_key(e) for e in entries)
        if key == self._key:
            return  # unchanged (a refresh that found nothing new)
        self._key = key
        self.entries = list(entries)
        self._stale = True
        if self.is_mounted and self.display:
            self._render_entries()  # hidden: rendered when shown (startup stays fast)

    def update_servers(self, states: ServerStates) -> None:
        """Show MCP server states: name → (state, detail)."""
        self.servers = dict(states)
        if self.is_mounted:
            self._render_servers()

    # ---- rendering ---------------------------------------------------------------------

    def on_show(self) -> None:
        if self._stale:
            self._render_entries()

    def _render_entries(self) -> None:
        self._stale = False
        ok = sorted((e for e in self.entries if isinstance(e, ToolSpec)), key=lambda t: t.name)
        broken = sorted((e for e in self.entries if isinstance(e, BrokenTool)),
                        key=lambda b: b.source)
        summary = f"Functions · {len(ok)} ok"
        if broken:
            summary += f" · {len(broken)} broken"
        self.query_one(".functions-panel--summary", Static).update(summary)
        options = [Option(self._broken_prompt(b), id=f"broken:{b.source}") for b in broken]
        options += [Option(self._tool_prompt(t), id=f"tool:{t.name}:{t.source}") for t in ok]
        listing = self.query_one(OptionList)
        highlighted = listing.highlighted_option.id if listing.highlighted_option else None
        listing.set_options(options)
        if highlighted is not None:
            try:
                listing.highlighted = listing.get_option_index(highlighted)
            except Exception:  # the entry went away: leave the highlight where it falls
                pass

    def _indented(self, text: str) -> str:
        """Wrapped under the name with a two-space hanging indent (Content wraps flush left)."""
        width = max(20, self._width - 3)  # minus the scrollbar
        if len(text) + 2 <= width:
            return "  " + text
        return textwrap.fill(text, width, initial_indent="  ", subsequent_indent="  ",
                             break_on_hyphens=False)

    def _tool_prompt(self, tool: ToolSpec) -> Content:
        return Content.assemble(
            ("✔ ", "$text-success"), (printable_line(tool.name), "bold"), "  ",
            (tool.format, "$text-accent"), "\n",
            (self._indented(printable_line(short_source(tool.source, self.root))), "$text-muted"),
        )

    def _broken_prompt(self, tool: BrokenTool) -> Content:
        return Content.assemble(
            ("✗ ", "$text-error"),
            (printable_line(short_source(tool.source, self.root)), "bold $text-error"),
            "  ", (tool.format, "$text-accent"),
            "\n", (self._indented(printable(tool.error)), "$text-error"),
        )

    def on_resize(self) -> None:
        width = self.size.width
        if width and width != self._width:
            self._width = width
            if self.display:
                self._render_entries()

    def _render_servers(self) -> None:
        widget = self.query_one(".functions-panel--servers", Static)
        widget.display = bool(self.servers)
        parts: list[str | tuple[str, str]] = [("MCP servers", "bold")]
        for name, (state, detail) in sorted(self.servers.items()):
            parts += ["\n  ", (printable_line(name), "bold"), " ",
                      (state, SERVER_STYLES.get(state, "$text-muted"))]
            if detail:
                parts.append((f" ({printable_line(detail)})", "$text-muted"))
        widget.update(Content.assemble(*parts))


def _entry_key(e: Entry) -> tuple[object, ...]:
    if isinstance(e, ToolSpec):
        return ("ok", e.name, e.format, e.source, e.description)
    return ("broken", e.source, e.format, e.error)
