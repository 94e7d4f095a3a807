"""Foreign text handed to a Textual widget, shown as it is: never read as markup.

Textual parses a plain str as content markup in many places (Static, Label, a tab's label,
Select and OptionList options, the command palette's entries and help, notifications, border
titles): a tool named `[@click=app.quit]x` would run an action when clicked, `[b]` would
style, and an unbalanced `[/]` raises. Widgets get their content from here only: `literal()`
for one piece of foreign text, `say()` for kep's own sentence with foreign pieces in it.
Both go through the display edge (core.display.foreign: controls and invisible runs made
visible, length bounded) and build Content directly, never from markup. A test scans the
code for markup strings built from variables (tests/unit/test_display_type.py).
"""

from __future__ import annotations

from typing import LiteralString

from textual.content import Content
from textual.fuzzy import Matcher

from tuiapp.security.display import Foreign, foreign


def literal(text: object, *, line: bool = False, limit: int | None = None) -> Content:
    """`text` as Content (never parsed as markup), through the display edge; `line`: on one
    line."""
    return Content(foreign(text, line=line, limit=limit))


def say(template: LiteralString, *parts: object, style: str = "") -> Content:
    """kep's own sentence (`template`, plain text with `{}` holes, never markup) with foreign
    `parts` in the holes, each through the display edge: say("MCP server {} failed: {}",
    name, reason)."""
    pieces = template.split("{}")
    if len(pieces) != len(parts) + 1:
        raise ValueError(f"{len(pieces) - 1} holes for {len(parts)} parts")
    out: list[str] = [pieces[0]]
    for part, piece in zip(parts, pieces[1:], strict=True):
        out += [foreign(part), piece]
    content = Content("".join(out))
    return content.stylize(style) if style else content


def shown(text: Content | Foreign) -> str:
    """Plain text for a place that takes only a str read without markup (a Notification
    with markup=False)."""
    return text.plain if isinstance(text, Content) else text


def highlighted(matcher: Matcher, candidate: str) -> Content:
    """Matcher.highlight without reading `candidate` as markup (it calls from_markup)."""
    content = literal(candidate, line=True)
    score, offsets = matcher.fuzzy_search.match(matcher.query, candidate)
    if not score or content.plain != candidate:
        return content
    for offset in offsets:
        if not candidate[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content
