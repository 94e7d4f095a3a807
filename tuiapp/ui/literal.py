"""Foreign text handed to a Textual widget, shown as it is: never read as markup.

Textual parses a plain str as content markup in many places (Static, a tab's label, the
command palette's prompt and help, notifications): a tool named `[@click=app.quit]x` would
run an action when clicked, `[b]` would style, and an unbalanced `[/]` raises. Foreign text
(names, descriptions, errors from tools, providers and MCP servers) goes through these
helpers, after the display edge (core.display) has made its control characters visible.
"""

from __future__ import annotations

from textual.content import Content
from textual.fuzzy import Matcher

from tuiapp.security.display import printable, printable_line


def literal(text: str, *, line: bool = False) -> Content:
    """`text` as Content (never parsed as markup), sanitised; `line`: on one line."""
    return Content(printable_line(text) if line else printable(text))


def escaped(text: str | None) -> str | None:
    """`text` for a place that only takes markup as a str (the palette's help): each `[`
    escaped, so the markup parser shows it as it is."""
    return None if text is None else printable(text).replace("[", "\\[")


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
