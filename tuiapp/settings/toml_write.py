"""Writing kep's TOML files (a theme choice, an "always" rule): readable and safe.

- An edit of an existing file changes only what it must: comments, blank lines, key order
  and quoting stay as the user wrote them (tomlkit, a round-trip TOML library; rewriting from
  parsed data would drop every comment). The edited text is parsed back and compared with
  the intended data; a shape the edit cannot express is written whole instead (`dumps`).
- Approval rules come out as the README shows them, one `[[approval.rules]]` table each
  (tomli_w alone would write them as one inline array).
- The write is atomic (a temp file beside the target, then a rename), keeps the file's mode,
  and goes through a symlink to the file it points to, so a kep.toml kept in a dotfiles repo
  stays a link.
"""

from __future__ import annotations

import os
import tempfile
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class LinkError(OSError):
    """The file is a symlink whose target does not exist: kep does not create it."""


def dumps(data: Mapping[str, Any]) -> str:
    import tomli_w  # only writers need it (not on the way to the first frame)

    approval = data.get("approval")
    rules = approval.get("rules") if isinstance(approval, Mapping) else None
    if not rules or not all(_flat(r) for r in rules):
        return tomli_w.dumps(dict(data))
    rest = dict(data)
    rest_approval = {k: v for k, v in approval.items() if k != "rules"}  # type: ignore[union-attr]
    if rest_approval:
        rest["approval"] = rest_approval
    else:
        del rest["approval"]
    parts = [tomli_w.dumps(rest).rstrip("\n")] if rest else []
    for rule in rules:
        parts.append("[[approval.rules]]\n" + tomli_w.dumps(rule).rstrip("\n"))
    text = "\n\n".join(p for p in parts if p) + "\n"
    if tomllib.loads(text) != tomllib.loads(tomli_w.dumps(dict(data))):
        return tomli_w.dumps(dict(data))  # a shape this layout cannot hold: plain and right
    return text


def with_rule_first(text: str, rule: Mapping[str, Any]) -> str | None:
    """`text` with `rule` put first among its approval rules, everything else kept as it
    was; None when the file's shape does not allow an edit in place."""
    import tomlkit
    from tomlkit.items import AoT, Array, InlineTable

    doc = tomlkit.parse(text)
    approval = _child_table(doc, "approval")
    if approval is None:
        return None
    rules = approval.get("rules")
    if isinstance(rules, AoT):
        table = tomlkit.table()
        table.update(rule)
        table.add(tomlkit.nl())  # a blank line before the rule that was first
        rules.insert(0, table)
    elif isinstance(rules, Array):
        inline = tomlkit.inline_table()
        inline.update(rule)
        rules.insert(0, inline)
    elif rules is not None:
        return None
    elif isinstance(approval, InlineTable):
        inline = tomlkit.inline_table()
        inline.update(rule)
        approval["rules"] = [inline]
    else:
        table = tomlkit.table()
        table.update(rule)
        approval.append("rules", tomlkit.aot())
        approval["rules"].append(table)
    return tomlkit.dumps(doc)


def with_value(text: str, key: str, value: Any) -> str | None:
    """`text` with the top-level `key` set to `value`: in place when it is there, else after
    the last top-level key before the first table (a new key at the end would land inside
    the last table)."""
    import tomlkit
    from tomlkit.items import AoT, Table

    doc = tomlkit.parse(text)
    if key in doc:
        doc[key] = value
        return tomlkit.dumps(doc)
    at = 0
    for i, (k, item) in enumerate(doc.body):
        if isinstance(item, Table | AoT):
            break
        if k is not None:
            at = i + 1
    doc._insert_at(at, key, value)  # (tomlkit has no public insert at a position)
    return tomlkit.dumps(doc)


def edited(text: str, edit: Any, want: Mapping[str, Any]) -> str:
    """The text `edit` makes of `text` when it parses back to `want`; otherwise (an edit
    tomlkit cannot make, or one that reads differently) `want` written whole."""
    try:
        out = edit(text)
        if out is not None and tomllib.loads(out) == want:
            return out
    except Exception:  # tomlkit on an odd file: the plain writer is always right
        pass
    return dumps(want)


def _umask() -> int:
    """The process umask, read without setting it (os.umask would, for every thread)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def _flat(rule: Any) -> bool:
    return isinstance(rule, Mapping) and all(
        isinstance(v, str | int | float | bool) for v in rule.values())


def write_atomic(path: Path, text: str) -> Path:
    """Replace the file `path` leads to with `text`; returns the file written."""
    target = Path(os.path.realpath(path))
    if path.is_symlink() and not target.exists():
        raise LinkError(f"{path} is a symlink to {target}, which does not exist")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode())
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def with_sandbox_list(text: str, tool: str, key: str, value: list[str]) -> str | None:
    """`text` with `[sandbox.tools.TOOL] key` set to `value`, the rest kept."""
    import tomlkit

    doc = tomlkit.parse(text)
    table: Any = doc
    for name, super_table in (("sandbox", True), ("tools", True), (tool, False)):
        table = _child_table(table, name, super_table=super_table)
        if table is None:
            return None
    table[key] = value
    return tomlkit.dumps(doc)


def _child_table(parent: Any, key: str, *, super_table: bool = True) -> Any:
    """`parent[key]` as a table, made when missing; None when it holds something else (the
    file's shape does not allow an edit in place)."""
    import tomlkit
    from tomlkit.items import InlineTable, Table

    child = parent.get(key)
    if child is None:
        child = tomlkit.table(is_super_table=super_table)
        parent.append(key, child)
    return child if isinstance(child, Table | InlineTable) else None
