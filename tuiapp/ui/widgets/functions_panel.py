"""The functions panel: every tool kep found, grouped by source file (MCP: by server).

Each group heads with its source and format; under it each tool with its status and the
first line of its description, broken sources with their full reason and a fix hint, and the
protocol check's findings once a check ran (a badge in the summary counts them). A filter box
narrows the list by name. Enter on a tool posts ToolChosen (the app opens the workbench).

The app calls `update_entries()` on every registry change; an unchanged list costs nothing, a
changed one rebuilds the option list (virtualised: only visible rows are rendered).
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from tuiapp.security.display import printable, printable_line
from tuiapp.settings import paths
from tuiapp.tools.check import Finding, broken_hint, counts
from tuiapp.ui.focus import focus_now
from tuiapp.vocab.tool_specs import BrokenTool, ToolSpec

Entry = ToolSpec | BrokenTool
# MCP server name → (state, detail): ("starting", ""), ("ready", "3 tools"),
# ("failed", "reason"), ("exited", "code 1").
ServerStates = Mapping[str, tuple[str, str]]

SERVER_STYLES = {"ready": "$text-success", "failed": "$text-error", "exited": "$text-warning",
                 "starting": "$text-accent"}
FINDING_MARKS = {"error": ("✗", "$text-error"), "warning": ("⚠", "$text-warning"),
                 "info": ("ℹ", "$text-muted")}


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


class FilterInput(Input):
    """The filter box. `/` is the key that starts a filter: typed into an empty box it is
    that key, not a character to match (no tool name has one)."""

    async def _on_key(self, event: events.Key) -> None:
        if event.character == "/" and not self.value:
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)


class FunctionsPanel(Widget):
    """Tools grouped by source (ok and broken), a filter, check findings, MCP server states."""

    DEFAULT_CSS = """
    FunctionsPanel {
        width: 1fr;
        height: 1fr;
        & > .functions-panel--summary { height: auto; padding: 0 1; text-style: bold; }
        & > .functions-panel--servers { height: auto; padding: 0 1; }
        & > Input { height: 1; border: none; padding: 0 1; margin: 0; }
        & > OptionList { height: 1fr; border: none; padding: 0; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "filter", show=False, id="functions_filter"),
        Binding("c", "app.check_tools", "check", show=False, id="functions_check"),
        Binding("r", "screen.mcp_resources", "MCP resources", show=False,
                id="functions_resources"),
    ]

    class ToolChosen(Message):
        """Enter on a tool (or a broken source): open it in the workbench."""

        def __init__(self, entry: Entry) -> None:
            super().__init__()
            self.entry = entry

    def __init__(self, root: Path | None = None, *, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.root = root
        self.entries: list[Entry] = []
        self.findings: list[Finding] | None = None  # None: no check ran yet
        self.servers: dict[str, tuple[str, str]] = {}
        self.filter_text = ""
        self._key: tuple[object, ...] | None = None
        self._width = 1000  # wrap width for reasons; the real one arrives with on_resize
        self._stale = True  # entries changed since the list was last built
        self._by_id: dict[str, Entry] = {}
        self._filter_on_mount = False

    def compose(self) -> ComposeResult:
        yield Static("Functions · none yet", classes="functions-panel--summary", markup=False)
        yield FilterInput(placeholder="/ filter by name", id="functions-filter", compact=True)
        servers = Static("", classes="functions-panel--servers")
        servers.display = False
        yield servers
        yield OptionList(compact=True)

    def on_mount(self) -> None:
        if self.display:
            self._render_entries()
        self._render_servers()
        if self._filter_on_mount:
            self.call_after_refresh(self.action_filter)

    # ---- updates -----------------------------------------------------------------------

    def update_entries(self, entries: Sequence[Entry]) -> None:
        """Show this list of tools (the whole registry, not a diff)."""
        key = tuple(_entry_key(e) for e in entries)
        if key == self._key:
            return  # unchanged (a refresh that found nothing new)
        self._key = key
        if self.findings:  # a changed source's findings no longer hold: run the check again
            before, after = _by_source(self.entries), _by_source(entries)
            self.findings = [f for f in self.findings
                             if before.get(f.source) == after.get(f.source)]
        self.entries = list(entries)
        self._mark_stale()

    def update_findings(self, findings: Sequence[Finding] | None) -> None:
        """Show the protocol check's findings (None: forget them)."""
        self.findings = None if findings is None else list(findings)
        self._mark_stale()

    def update_servers(self, states: ServerStates) -> None:
        """Show MCP server states: name → (state, detail)."""
        self.servers = dict(states)
        if self.is_mounted:
            self._render_servers()

    def _mark_stale(self) -> None:
        self._stale = True
        if self.is_mounted and self.display:
            self._render_entries()  # hidden: rendered when shown (startup stays fast)

    # ---- filter and choice -------------------------------------------------------------

    def action_filter(self) -> None:
        boxes = self.query(Input)
        if boxes:
            focus_now(boxes.first())
        else:  # asked for before the panel is mounted (ctrl+f at start-up): once it is
            self._filter_on_mount = True

    @on(Input.Changed, "#functions-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.filter_text = event.value.strip().lower()
        self._render_entries()

    @on(Input.Submitted, "#functions-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        listing = self.query_one(OptionList)
        focus_now(listing)
        if listing.highlighted is None and listing.option_count:
            listing.action_first()

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        entry = self._by_id.get(event.option.id or "")
        if entry is not None:
            self.post_message(self.ToolChosen(entry))

    # ---- rendering ---------------------------------------------------------------------

    def on_show(self) -> None:
        if self._stale:
            self._render_entries()

    def _matches(self, e: Entry) -> bool:
        if not self.filter_text:
            return True
        name = e.name if isinstance(e, ToolSpec) else os.path.basename(e.source)
        return self.filter_text in name.lower()

    def _render_entries(self) -> None:
        self._stale = False
        ok = [e for e in self.entries if isinstance(e, ToolSpec)]
        broken = [e for e in self.entries if isinstance(e, BrokenTool)]
        summary = f"Functions · {len(ok)} ok"
        if broken:
            summary += f" · {len(broken)} broken"
        if self.findings is not None:
            n = counts(self.findings)
            parts = [f"{n[s]} {s}{'s' if n[s] != 1 and s != 'info' else ''}"
                     for s in ("error", "warning", "info") if n[s]]
            summary += " · check: " + (", ".join(parts) if parts else "clean")
        self.query_one(".functions-panel--summary", Static).update(
            Content(summary))  # counts: kep's words
        groups: dict[str, list[Entry]] = {}
        for e in self.entries:
            if self._matches(e):
                groups.setdefault(e.source, []).append(e)
        # Broken first, then the project's own, then the rest, each by the name shown (never
        # by absolute path: where kep is installed must not reorder the list).
        shown = {s: short_source(s, self.root) for s in groups}
        order = sorted(groups, key=lambda s: (not any(isinstance(e, BrokenTool)
                                                      for e in groups[s]),
                                              shown[s].startswith(("built-in/", "~/", "/")),
                                              shown[s]))
        findings: dict[str, list[Finding]] = {}
        for f in self.findings or ():
            findings.setdefault(f.source, []).append(f)
        options: list[Option] = []
        self._by_id = {}
        for source in order:
            items = sorted(groups[source], key=lambda e: getattr(e, "name", ""))
            options.append(Option(self._group_prompt(source, items[0].format),
                                  id=f"group:{source}", disabled=True))
            for e in items:
                oid = (f"tool:{e.name}:{source}" if isinstance(e, ToolSpec)
                       else f"broken:{source}")
                self._by_id[oid] = e
                prompt = (self._tool_prompt(e) if isinstance(e, ToolSpec)
                          else self._broken_prompt(e))
                options.append(Option(prompt, id=oid))
            for i, f in enumerate(findings.get(source, ())):
                options.append(Option(self._finding_prompt(f), id=f"finding:{source}:{i}",
                                      disabled=True))
        listing = self.query_one(OptionList)
        highlighted = listing.highlighted_option.id if listing.highlighted_option else None
        listing.set_options(options)
        if highlighted is not None:
            try:
                listing.highlighted = listing.get_option_index(highlighted)
            except Exception:  # the entry went away: leave the highlight where it falls
                pass

    def _indented(self, text: str, indent: str = "    ") -> str:
        """Wrapped with a hanging indent (Content wraps flush left)."""
        width = max(20, self._width - 3)  # minus the scrollbar
        if len(text) + len(indent) <= width:
            return indent + text
        return textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent,
                             break_on_hyphens=False)

    def _group_prompt(self, source: str, fmt: str) -> Content:
        return Content.assemble(
            (printable_line(short_source(source, self.root)), "bold $text-muted"),
            "  ", (fmt, "$text-accent"))

    def _tool_prompt(self, tool: ToolSpec) -> Content:
        desc = (tool.description.strip().splitlines() or [""])[0]
        return Content.assemble(
            ("  ✔ ", "$text-success"), (printable_line(tool.name), "bold"), "  ",
            (tool.format, "$text-accent"),
            "\n", (self._indented(printable_line(desc) if desc else "(no description)"),
                   "$text-muted"),
        )

    def _broken_prompt(self, tool: BrokenTool) -> Content:
        hint = broken_hint(tool.error, tool.format)
        return Content.assemble(
            ("  ✗ ", "$text-error"),
            (printable_line(os.path.basename(tool.source)), "bold $text-error"),
            "  ", (tool.format, "$text-accent"),
            "\n", (self._indented(printable(tool.error)), "$text-error"),
            *(("\n", (self._indented("fix: " + printable(hint)), "$text-warning"))
              if hint else ()),
        )

    def _finding_prompt(self, f: Finding) -> Content:
        mark, style = FINDING_MARKS[f.severity]
        return Content.assemble(
            (f"    {mark} ", style), (f.code, style), ": ", printable(f.message),
            "\n", (self._indented("fix: " + f.fix, "      "), "$text-muted"),
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


def _by_source(entries: Sequence[Entry]) -> dict[str, list[tuple[object, ...]]]:
    out: dict[str, list[tuple[object, ...]]] = {}
    for e in entries:
        out.setdefault(e.source, []).append(_entry_key(e))
    return out


def _entry_key(e: Entry) -> tuple[object, ...]:
    if isinstance(e, ToolSpec):
        return ("ok", e.name, e.format, e.source, e.description)
    return ("broken", e.source, e.format, e.error)
