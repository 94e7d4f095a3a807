"""The project files `@` completion offers, and the fuzzy match over them.

The list is what git would show: `.gitignore` files (the root's and every folder's, with
gitignore's own rules through pathspec: negation, anchoring and `**` are subtle) leave out what
they name, `.git` and hidden files (`.env`, credential stores: security.hidden) are never
offered, links are not followed. It is capped at MAX_FILES. Matching is a case-insensitive
subsequence (`rdme` finds README.md), ranked by how tight the match is and whether it falls in
the file's own name; a compiled regex does the first cut, so 10,000 names take a few ms
(tests/bench/mention_complete.py).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tuiapp.security import project_files
from tuiapp.security.hidden import hidden_paths, is_dotenv_name

MAX_FILES = 50_000
SHOWN = 50  # candidates a completion list shows


def _spec(folder: Path, root: Path) -> object | None:
    """The GitIgnoreSpec of `folder/.gitignore`, or None."""
    try:
        # Confined like every project file: a `.gitignore` linked to a file outside the
        # project (or a hidden one) is not read; it would steer the list by a file's lines.
        text = project_files.read_text(folder / ".gitignore", errors="replace", confine=root)
    except project_files.ProjectFileError:
        return None
    if not text:
        return None
    from pathspec import GitIgnoreSpec  # imported on first use: startup time

    return GitIgnoreSpec.from_lines(text.splitlines())


def _ignored(specs: list[tuple[str, object]], rel: str, is_dir: bool) -> bool:
    for base, spec in specs:
        if base and not rel.startswith(base):
            continue
        sub = rel[len(base):] + ("/" if is_dir else "")
        if spec.match_file(sub):  # type: ignore[attr-defined]
            return True
    return False


def project_files_list(root: Path, limit: int = MAX_FILES) -> list[str]:
    """Paths relative to `root` ("/"-separated) of the files completion may offer."""
    root = Path(os.path.realpath(root))
    # Folders are walked without following links, so each is its real path already.
    hidden = {Path(os.path.realpath(p)) for p in hidden_paths()}
    out: list[str] = []
    stack: list[tuple[Path, str, list[tuple[str, object]]]] = [(root, "", [])]
    while stack and len(out) < limit:
        folder, rel, specs = stack.pop()
        spec = _spec(folder, root)
        specs = [*specs, (rel, spec)] if spec is not None else specs
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        dirs = []
        for e in entries:
            name = rel + e.name
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if e.name == ".git" or is_dotenv_name(e.name) or _ignored(specs, name, is_dir) \
                    or (is_dir and Path(e.path) in hidden):
                continue
            if is_dir:
                dirs.append((Path(e.path), name + "/", specs))
            else:
                out.append(name)
                if len(out) >= limit:
                    break
        stack.extend(reversed(dirs))
    return out


def _pattern(query: str) -> re.Pattern[str]:
    return re.compile(".*?".join(f"({re.escape(c)})" for c in query), re.IGNORECASE)


def fuzzy(query: str, names: list[str], limit: int = SHOWN) -> list[str]:
    """The best `limit` names matching `query` as a subsequence, best first."""
    if not query:
        return names[:limit]
    pattern = _pattern(query)
    scored: list[tuple[int, int, str]] = []
    for name in names:
        m = pattern.search(name)
        if m is None:
            continue
        start, end = m.start(), m.end()
        base = name.rfind("/") + 1
        # Tighter matches, matches in the file's own name and shorter paths first.
        score = (end - start) - len(query) + (0 if start >= base else 20) + len(name) // 8
        scored.append((score, len(name), name))
    scored.sort()
    return [n for _, _, n in scored[:limit]]
