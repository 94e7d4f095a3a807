"""The diff shown above a file-writing built-in's arguments in the approval panel: the
summary (path, +added −removed, why not, when the call will fail) and the unified diff,
coloured, every line through the display edge (display.diff_line). The panel's arguments
region scrolls, so a long diff scrolls with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.content import Content

from tuiapp.security.display import diff_line, printable_line
from tuiapp.tools.file_preview import FilePreview, preview
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

STYLES = {"+": "$text-success", "-": "$text-error", "@": "$text-accent"}


def diff_content(p: FilePreview) -> Content:
    head = Content.assemble(("diff ", "dim"), (printable_line(p.path), "bold"), "  ",
                            (f"+{p.added}", "$text-success"), " ", (f"−{p.removed}", "$text-error"))
    rows = [head]
    if p.error:
        rows.append(Content.styled(f"✗ {printable_line(p.error)}", "bold $text-warning"))
    if p.note:
        rows.append(Content.styled(printable_line(p.note), "dim"))
    for line in p.lines:
        style = "bold" if line.startswith(("--- ", "+++ ")) else STYLES.get(line[:1], "")
        rows.append(Content.styled(diff_line(line), style))
    if p.more:
        rows.append(Content.styled(f"… {p.more} more diff lines", "dim"))
    return Content("\n").join(rows)


def with_diff(arguments: Any, spec: ToolSpec, call: ToolCall, root: Path) -> Any:
    """The arguments' highlighted JSON, led by the diff when the tool is one of kep's file
    writers (recognised by its file: tools.file_preview)."""
    p = preview(spec, call.arguments, root)
    if p is None:
        return arguments
    return Content.assemble(diff_content(p), "\n\n", Content.styled("arguments:", "dim"), "\n",
                            arguments)
