"""The completion list above the prompt while a `/command` is being typed: the built-ins
first, then the user's commands (`.prompt` files, MCP prompts) with their arguments and
descriptions; one that a built-in shadows is listed, greyed, and says so.

↑/↓ move in the list, Tab completes the name (to type arguments), Enter runs the highlighted
command, Esc closes the list. Names and descriptions come from files and servers: shown
literally (ui/literal), on one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.content import Content
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from tuiapp.ui.literal import literal

if TYPE_CHECKING:
    from tuiapp.ui.widgets.prompt_input import PromptInput  # (a type only: no import circle)

MAX_SHOWN = 8  # rows; the list scrolls past that


@dataclass(frozen=True)
class Entry:
    name: str
    usage: str
    description: str
    note: str = ""  # "built-in", "prompt", … or why it cannot be run by this name
    enabled: bool = True


def entries(app: object) -> list[Entry]:
    from tuiapp.ui.slash.builtins import BUILTINS
    from tuiapp.ui.slash.dispatch import user_commands

    out = [Entry(b.name, b.usage, b.description, "built-in") for b in BUILTINS.values()]
    for cmd in user_commands(app):  # type: ignore[arg-type]
        if cmd.shadowed:
            out.append(Entry(cmd.name, cmd.usage, cmd.description,
                             f"{cmd.source}: shadowed by the built-in /{cmd.name}", False))
        else:
            out.append(Entry(cmd.name, cmd.usage, cmd.description, cmd.source))
    return out


def matching(all_entries: list[Entry], typed: str) -> list[Entry]:
    """Names that start with what was typed, then names that contain it (case ignored)."""
    word = typed.lower()
    first: list[Entry] = []
    inside: list[Entry] = []
    for e in all_entries:
        name = e.name.lower()
        if name.startswith(word):
            first.append(e)
        elif word in name:
            inside.append(e)
    return first + inside


def row(entry: Entry) -> Content:
    name = literal("/" + entry.name, line=True, limit=60)
    parts: list[Content | str] = [name.stylize("bold") if entry.enabled else name]
    if entry.usage:
        parts += [" ", literal(entry.usage, line=True, limit=60).stylize("italic")]
    parts += ["  ", literal(entry.description, line=True, limit=120)]
    if entry.note:
        parts += ["  ", literal(f"({entry.note})", line=True, limit=80).stylize("dim")]
    return Content.assemble(*parts)


class SlashMenu(OptionList):
    """Shown by the prompt while its text is `/word` (no space yet)."""

    DEFAULT_CSS = f"""
    SlashMenu {{ height: auto; max-height: {MAX_SHOWN + 2}; margin: 0 1; display: none; }}
    SlashMenu.-open {{ display: block; }}
    """
    can_focus = False  # the keyboard stays in the prompt, which moves the highlight

    def __init__(self) -> None:
        super().__init__(id="slash-menu", compact=True)
        self._all: list[Entry] | None = None  # read when the list opens, kept while open
        self.shown: list[Entry] = []

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def follow(self, text: str) -> None:
        """The prompt's text changed: open, filter or close."""
        if not text.startswith("/") or text.startswith("//") or any(c.isspace() for c in text):
            self.close()
            return
        if self._all is None:
            self._all = entries(self.app)
        self.shown = matching(self._all, text[1:])
        if not self.shown:
            self.close(keep=True)
            return
        self._beside_prompt()
        self.set_options([Option(row(e), disabled=not e.enabled) for e in self.shown])
        enabled = [i for i, e in enumerate(self.shown) if e.enabled]
        self.highlighted = enabled[0] if enabled else None
        self.add_class("-open")

    def _beside_prompt(self) -> None:
        """Right above the prompt, also when a panel was mounted before the prompt later."""
        parent = self.parent
        if parent is None:
            return
        siblings = list(parent.children)
        after = siblings.index(self) + 1
        prompt = next((w for w in siblings if w.id == "prompt"), None)
        if prompt is not None and (after >= len(siblings) or siblings[after] is not prompt):
            parent.move_child(self, before=prompt)

    def close(self, keep: bool = False) -> None:
        self.remove_class("-open")
        if not keep:
            self._all = None

    def chosen(self) -> Entry | None:
        i = self.highlighted
        return self.shown[i] if i is not None and 0 <= i < len(self.shown) else None

    def take_key(self, key: str, prompt: PromptInput) -> bool:
        """A key pressed in the prompt while the list is open; True when it was the list's."""
        if key in ("up", "down"):
            self.action_cursor_up() if key == "up" else self.action_cursor_down()
            return True
        if key == "escape":
            self.close()
            return True
        entry = self.chosen()
        if key == "tab" and entry is not None:
            prompt.load_text(f"/{entry.name} ")
            prompt.move_cursor(prompt.document.end)
            return True
        if key == "enter" and entry is not None:
            self.close()
            prompt.load_text(f"/{entry.name}")
            return False  # the prompt sends it
        return False
