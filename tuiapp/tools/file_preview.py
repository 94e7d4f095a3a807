"""What a call to one of kep's file-writing built-ins would change: a unified diff of the file
as it is now against what the call would leave, for the approval panel and `kep call`.

The current file is read through the one project-file reader with confinement (a path out of
the root, through a link or not, is refused here as the built-in refuses it). editfile's edits
are applied by the built-in's own code (kep_edits.py beside it), so the diff shown is what it
would write. Sizes are bounded: a huge or binary file gets a one-line summary, a long diff is
cut, and every line is cut (display.diff_line) before it is shown.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import importlib.util
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from tuiapp.security import policy, project_files
from tuiapp.settings import paths
from tuiapp.vocab.tool_specs import ToolSpec

DIFF_BYTES = 4 << 20  # either side bigger than this: counts only, no line diff
DIFF_LINES = 50_000  # either side with more lines than this: likewise
SHOWN_LINES = 2_000  # diff lines kept for display


@dataclass(frozen=True)
class FilePreview:
    path: str  # as the call names it
    lines: tuple[str, ...] = ()  # unified diff lines, raw (display.diff_line shows them)
    added: int = 0
    removed: int = 0
    note: str = ""  # "new file", "CRLF line endings", "binary: …"
    error: str = ""  # the call will fail: why (nothing would be written)
    more: int = 0  # diff lines not kept

    def summary(self) -> str:
        """One line: path, +added −removed, and the note."""
        counts = f"+{self.added} −{self.removed}"
        tail = f" · {self.error}" if self.error else (f" · {self.note}" if self.note else "")
        return f"{self.path}  {counts}{tail}"


@cache
def edits_module() -> ModuleType:
    """kep_edits.py from kep's bundled functions (the code editfile runs)."""
    path = paths.builtin_functions_dir() / "kep_edits.py"
    spec = importlib.util.spec_from_file_location("kep_bundled_edits", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def preview(spec: ToolSpec | None, arguments: dict[str, Any], root: Path) -> FilePreview | None:
    """The diff of a call to kep's writefile / editfile / write_base64_file; None for any
    other tool (recognised by its file, never by name)."""
    if spec is None or not policy.is_file_writer(spec):
        return None
    name = arguments.get("filename")
    if not isinstance(name, str) or not name or "\0" in name:
        return FilePreview(str(name), error="no file name")
    try:
        old = project_files.read_bytes(Path(root) / name, DIFF_BYTES, confine=Path(root),
                                       head=True)
    except project_files.ProjectFileError as e:
        return FilePreview(name, error=f"refused: {e.reason}")
    if old is not None and len(old) > DIFF_BYTES:
        return FilePreview(name, note=f"too large to diff (over {DIFF_BYTES >> 20} MiB)")
    new, error = _new_content(spec.name, arguments, old)
    if error:
        return FilePreview(name, error=error)
    assert new is not None
    return diff(name, old, new)


def _new_content(tool: str, arguments: dict[str, Any],
                 old: bytes | None) -> tuple[bytes | None, str]:
    if tool == "writefile":
        content = arguments.get("content")
        if not isinstance(content, str):
            return None, "no content"
        return content.encode("utf-8", "replace"), ""
    if tool == "write_base64_file":
        try:
            return base64.b64decode(str(arguments.get("base64_str", "")), validate=True), ""
        except (binascii.Error, ValueError) as e:
            return None, f"base64_str is not valid base64: {e}"
    edits = edits_module()
    if old is None:
        return None, "the file does not exist (editfile only edits; writefile creates)"
    if edits.looks_binary(old):
        return None, "the file looks binary; editfile will refuse it"
    try:
        return edits.apply_edits(old, arguments.get("edits")), ""
    except edits.EditError as e:
        return None, f"{e}; nothing would be written"


def diff(name: str, old: bytes | None, new: bytes) -> FilePreview:
    """The unified diff of `old` (None: the file does not exist) against `new`."""
    before = old or b""
    notes = ["new file"] if old is None else []
    if b"\0" in before[:8192] or b"\0" in new[:8192]:
        same = "unchanged" if before == new else f"{len(before)} → {len(new)} bytes"
        return FilePreview(name, note="; ".join([*notes, f"binary: {same}"]))
    if b"\r\n" in before or b"\r\n" in new:
        notes.append("CRLF line endings")
    a_text, b_text = _text(before), _text(new)
    if a_text is None or b_text is None:
        notes.append("not valid UTF-8: undecodable bytes shown as �")
        a_text, b_text = before.decode("utf-8", "replace"), new.decode("utf-8", "replace")
    a, b = _lines(a_text), _lines(b_text)
    if max(len(before), len(new)) > DIFF_BYTES or max(len(a), len(b)) > DIFF_LINES:
        note = f"too large to diff: {len(a)} → {len(b)} lines, {len(before)} → {len(new)} bytes"
        return FilePreview(name, note="; ".join([*notes, note]))
    if a == b:
        notes.append("no change")
    lines: list[str] = []
    added = removed = 0
    for line in difflib.unified_diff(a, b, f"a/{name}", f"b/{name}", n=3, lineterm=""):
        if line.startswith("+") and not line.startswith("+++ "):
            added += 1
        elif line.startswith("-") and not line.startswith("--- "):
            removed += 1
        lines.append(line)
    more = max(0, len(lines) - SHOWN_LINES)
    return FilePreview(name, tuple(lines[:SHOWN_LINES]), added, removed, "; ".join(notes),
                       more=more)


def _text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _lines(text: str) -> list[str]:
    """Lines without their ending (CR LF or LF); a last line without one is marked."""
    if not text:
        return []
    parts = text.split("\n")
    last = parts.pop()
    out = [p[:-1] if p.endswith("\r") else p for p in parts]
    if last:
        out.append(last + " ⏎̸")  # no newline at the end of the file
    return out


def describe(p: FilePreview) -> str:
    """The preview as plain text (`kep call`), raw: the caller shows it through the edge."""
    body = list(p.lines) + ([f"… {p.more} more diff lines"] if p.more else [])
    return "\n".join([p.summary(), *body])
