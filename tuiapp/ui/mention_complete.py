"""`@` completion in the prompt: while the word at the cursor starts with `@`, a list above the
prompt offers the project's files (conversation.mention_index: .gitignore respected, hidden
files never offered) and the connected MCP servers' resources (`@server:uri`), fuzzy matched.
Tab or Enter takes the highlighted one, Up/Down move, Esc closes the list.

The file list is built in a thread, once per `@` word begun (so a file made meanwhile shows
up), and matching runs in a thread too: 10,000 files never slow typing down. Names reach the
screen only through the display edge (ui.literal), so a file named with ESC or `[markup]`
shows as text."""

from __future__ import annotations

import asyncio
import re
from typing import Any, ClassVar

from textual import work
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option

from tuiapp.conversation import mention_index
from tuiapp.conversation.mentions import pasted_mention, quote
from tuiapp.ui.literal import literal

# The `@` word ending at the cursor: unquoted, or an open quote (spaces allowed).
_WORD = re.compile(r'(?:^|(?<=\s))@("(?:[^"\\]|\\.)*|[^\s"]*)$')
RESOURCE_LIST_TIMEOUT = 2.0


def word_at(line_before_cursor: str) -> tuple[int, str] | None:
    """(column of the `@`, the query typed after it) or None when not in an `@` word."""
    m = _WORD.search(line_before_cursor)
    if m is None:
        return None
    query = m.group(1)
    return m.start(), query[1:] if query.startswith('"') else query


class MentionList(OptionList):
    """The candidates, above the prompt. It never takes focus: keys stay in the prompt."""

    DEFAULT_CSS = """
    MentionList { height: auto; max-height: 10; border: round $secondary; padding: 0 1; }
    MentionList.-hidden { display: none; }
    """
    can_focus = False


async def _resources(mcp: Any) -> list[str]:
    """`server:uri` of the resources connected servers list (none when they list none)."""
    out: list[str] = []
    states = getattr(mcp, "states", None)
    for name in list(states()) if callable(states) else []:
        conn = mcp.connection(name)
        client = getattr(conn, "client", None)
        if client is None or not hasattr(client, "list_resources"):
            continue
        try:
            result = await asyncio.wait_for(client.list_resources(), RESOURCE_LIST_TIMEOUT)
        except Exception:  # a server without resources, or slow: typed URIs still work
            continue
        out += [f"{name}:{r.uri}" for r in getattr(result, "resources", [])[:500]]
    return out


class MentionCompletion:
    """App mixin: keeps the list in step with the prompt."""

    _mention_names: ClassVar[list[str]] = []  # (set per instance once listed)
    _mention_word: tuple[int, str] | None = None

    def _mention_list(self) -> MentionList:
        app: Any = self
        found = app.query(MentionList)
        if found:
            return found.first()
        prompt = app.query_one("#prompt")
        widget = MentionList(id="mentions", classes="-hidden")
        prompt.parent.mount(widget, before=prompt)
        return widget

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if event.text_area.id == "prompt":
            self._mention_check(event.text_area)

    def _mention_check(self, prompt: TextArea) -> None:
        row, col = prompt.cursor_location
        before = prompt.document.get_line(row)[:col]
        word = word_at(before) if "@" in before else None
        was, self._mention_word = self._mention_word, word
        if word is None:
            if was is not None:
                self._mention_list().add_class("-hidden")
            return
        self._mention_search(word[1], fresh=was is None)

    @work(exclusive=True, group="mention", exit_on_error=False)
    async def _mention_search(self, query: str, fresh: bool) -> None:
        app: Any = self
        if fresh or not self._mention_names:
            files = await asyncio.to_thread(mention_index.project_files_list, app.ws.root)
            self._mention_names = files + await _resources(app.ws.mcp)
        names = await asyncio.to_thread(mention_index.fuzzy, query, self._mention_names)
        if self._mention_word is None:  # the word was finished meanwhile
            return
        widget = self._mention_list()
        widget.clear_options()
        widget.add_options(Option(literal(n, line=True), id=str(i))
                           for i, n in enumerate(names))
        self._mention_shown = names
        widget.set_class(not names, "-hidden")
        if names:
            widget.highlighted = 0

    def completion_key(self, key: str) -> bool:
        """A key pressed in the prompt; True when the open list took it."""
        app: Any = self
        if self._mention_word is None or not app.query(MentionList):
            return False
        widget = self._mention_list()
        if widget.has_class("-hidden"):
            return False
        if key == "escape":
            widget.add_class("-hidden")
        elif key == "down":
            widget.action_cursor_down()
        elif key == "up":
            widget.action_cursor_up()
        elif key in ("tab", "enter"):
            shown: list[str] = getattr(self, "_mention_shown", [])
            i = widget.highlighted
            if i is None or i >= len(shown):
                return False
            self._mention_take(shown[i])
        else:
            return False
        return True

    def pasted_text(self, text: str) -> str:
        """What a paste inserts: a pasted path of an existing file becomes its mention."""
        app: Any = self
        return pasted_mention(text, app.ws.root) or text

    def _mention_take(self, name: str) -> None:
        app: Any = self
        prompt = app.query_one("#prompt", TextArea)
        row, col = prompt.cursor_location
        start = (self._mention_word or (col, ""))[0]
        self._mention_word = None
        self._mention_list().add_class("-hidden")
        prompt.replace(quote(name) + " ", (row, start), (row, col))
