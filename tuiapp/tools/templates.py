"""New tools from templates (`kep new`, the palette's "New function").

Each template is a working tool that lists, runs and passes the protocol check as written:
an `echo` of a message, optionally upper-cased, to replace with the real work. Each is written
where kep discovers its format in the project, so hot reload picks it up at once.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from tuiapp.tools.templates_text import TEXTS

# format → the languages it has, the first being the default
LANGS: dict[str, tuple[str, ...]] = {
    "keprompt": ("python", "bash"),
    "llm-functions": ("bash", "python"),
    "loki": ("python",),
    "extension": ("python",),
    "aitool": ("python",),
}
FORMATS = tuple(LANGS)
# A Python identifier in lower case works in every format (a function, a file stem, a class
# attribute); keprompt executables may also use "-" as keprompt's own names do.
NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,63}")
KEPROMPT_NAME_RE = re.compile(r"[a-z][a-z0-9_-]{0,63}")
AITOOL_DIR = "aitools"


class TemplateError(Exception):
    """One line saying what is wrong; nothing was written."""


@dataclass(frozen=True)
class Created:
    path: Path
    notes: tuple[str, ...] = ()  # extra lines to tell the user (e.g. kep.toml was extended)


def _shown_name(name: str) -> str:
    text = name if len(name) <= 40 else name[:40] + "…"
    return repr(text)  # repr makes a tab, ESC or newline visible


def validate(name: str, fmt: str, lang: str | None) -> str:
    """The language to use; TemplateError when the name, format or language is not right."""
    if fmt not in LANGS:
        raise TemplateError(f"unknown format {fmt!r}; formats: {', '.join(FORMATS)}")
    langs = LANGS[fmt]
    if lang is None:
        lang = langs[0]
    elif lang not in langs:
        raise TemplateError(f"{fmt} tools are written in {' or '.join(langs)}, not {lang!r}")
    rule = KEPROMPT_NAME_RE if fmt == "keprompt" else NAME_RE
    if not rule.fullmatch(name):
        extra = ", digits, _ or -" if fmt == "keprompt" else ", digits or _"
        raise TemplateError(f"invalid name {_shown_name(name)}: use 1-64 lower-case letters"
                            f"{extra}, starting with a letter (e.g. word_count)")
    return lang


def target(root: Path, name: str, fmt: str, lang: str) -> Path:
    """Where kep discovers a tool of this format in the project at `root`."""
    if fmt == "keprompt":
        return root / "prompts" / "functions" / name
    if fmt == "llm-functions":
        return root / "tools" / f"{name}{'.sh' if lang == 'bash' else '.py'}"
    if fmt == "loki":
        return root / "functions" / "tools" / f"{name}.py"
    if fmt == "extension":
        return root / "extensions" / f"{name}_tool.py"
    return root / AITOOL_DIR / f"{name}.py"


def render(name: str, fmt: str, lang: str) -> str:
    cls = "".join(part.capitalize() for part in re.split(r"[_-]", name)) + "Tool"
    return TEXTS[(fmt, lang)].replace("__NAME__", name).replace("__CLASS__", cls)


def create(root: Path, name: str, fmt: str = "keprompt", lang: str | None = None,
           *, aitool_dirs: tuple[Path, ...] = ()) -> Created:
    """Write the template; refuse to overwrite. `aitool_dirs`: configured AITool source
    directories (the first is used); with none, aitools/ is added to kep.toml."""
    lang = validate(name, fmt, lang)
    notes: list[str] = []
    path = target(root, name, fmt, lang)
    if fmt == "aitool" and aitool_dirs:
        path = aitool_dirs[0] / f"{name}.py"
    if os.path.lexists(path):
        raise TemplateError(f"{path} exists; kep new never overwrites (pick another name)")
    _stay_inside(root, path)  # before mkdir: a linked folder must not be created through
    path.parent.mkdir(parents=True, exist_ok=True)
    _stay_inside(root, path)
    text = render(name, fmt, lang)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o755 if text.startswith(
            "#!") else 0o644)
    except FileExistsError:
        raise TemplateError(f"{path} exists; kep new never overwrites") from None
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    if fmt == "aitool" and not aitool_dirs:
        notes += _register_aitool_dir(root, path)
    return Created(path, tuple(notes))


def _stay_inside(root: Path, path: Path) -> None:
    """A target inside the project must stay there: a checkout's `prompts/functions` that is a
    link out of it is refused, not written through. (A configured folder outside the
    project, named as such, is the user's choice.)"""
    from tuiapp.security import project_files

    top = Path(os.path.abspath(root))
    if top not in Path(os.path.abspath(path)).parents:
        return
    existing = path.parent
    while not os.path.lexists(existing) and existing != top:
        existing = existing.parent
    try:
        project_files.confined(existing, root)
    except project_files.ProjectFileError as e:
        raise TemplateError(f"cannot write {path}: {e.reason}") from None


def _register_aitool_dir(root: Path, path: Path) -> list[str]:
    """AITool classes are only read from configured sources: add aitools/ to kep.toml."""
    import tomllib

    toml = root / "kep.toml"
    entry = f'\n[[tools.sources]]\nformat = "aitool"\npath = "{AITOOL_DIR}"\n'
    from tuiapp.security import project_files

    try:
        before = project_files.read_bytes(toml) or b""
    except project_files.ProjectFileError as e:
        path.unlink()
        raise TemplateError(str(e)) from None
    after = before + (b"" if not before or before.endswith(b"\n") else b"\n") + entry.encode()
    try:
        tomllib.loads(after.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        path.unlink()
        raise TemplateError(
            f"cannot add the aitools source to {toml} (it is not valid TOML, or sets "
            f"tools.sources inline); add it by hand:{entry.rstrip()}") from None
    toml.write_bytes(after)
    return [f"added [[tools.sources]] aitool {AITOOL_DIR!r} to {toml}"]
