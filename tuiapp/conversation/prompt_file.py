"""keprompt `.prompt` files: finding them, parsing them into statements, the syntax check.

`<<var>>` substitution is in prompt_variables, `.cmd` call arguments in prompt_calls.

A statement is a line whose first non-blank characters are a known `.keyword` (followed by a
space or the end of the line); other lines continue the previous text statement, as in
keprompt. Running a parsed file is prompt_run's job. No textual here.

Where kep deliberately differs from keprompt 3.1.0 (its bugs, not its language):
- substitution happens once, on the author's text only: a model reply, a tool result or an
  included file that contains `<<x>>` is data and is never read as a template;
- `.cmd` arguments are real literals (quoted strings unquoted, numbers as numbers, commas
  inside quotes kept);
- a bad statement is reported with file, line and statement before anything is sent;
- continuation lines keep their indentation and blank lines (keprompt strips them).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tuiapp.conversation.prompt_calls import (
    NAME,
    parse_cmd,
    parse_tool_call,
    parse_tool_result_header,
)
from tuiapp.conversation.prompt_model import (
    PromptError,
    PromptFile,
    PromptNotFound,
    Statement,
)

# keyword → does it take continuation lines (multi-line text)?
KEYWORDS: dict[str, bool] = {
    ".prompt": True,
    ".functions": False,
    ".system": True,
    ".user": True,
    ".assistant": True,
    ".text": True,
    ".set": False,
    ".include": False,
    ".image": False,
    ".cmd": False,
    ".exec": False,
    ".print": True,
    ".exit": False,
    ".#": False,
    ".tool_call": False,
    ".tool_result": True,
    ".debug": False,
    ".clear": False,
}
UNSUPPORTED = {".clear": "kep does not run `.clear` (it deletes files); remove the line"}
FUNCTION_ENTRY = re.compile(r"[\w-]+(\.(\*|[\w-]+))?")


# ---- files ---------------------------------------------------------------------------------

def prompts_dir(root: Path) -> Path:
    return root / "prompts"


def list_prompts(root: Path) -> list[Path]:
    d = prompts_dir(root)
    return sorted(p for p in d.glob("*.prompt") if p.is_file()) if d.is_dir() else []


def find_prompt(root: Path, name: str) -> Path:
    """`NAME` → prompts/NAME.prompt (case-insensitive match allowed); a path to a .prompt file
    is taken as is."""
    direct = Path(name)
    if name.endswith(".prompt") and (direct if direct.is_absolute() else root / direct).is_file():
        return direct if direct.is_absolute() else root / direct
    stem = name[: -len(".prompt")] if name.endswith(".prompt") else name
    candidates = list_prompts(root)
    for p in candidates:
        if p.stem == stem:
            return p
    for p in candidates:
        if p.stem.lower() == stem.lower():
            return p
    known = ", ".join(p.stem for p in candidates) or "none"
    raise PromptNotFound(f"no prompt {name!r} in {prompts_dir(root)} (prompts: {known})")


def load(path: Path, root: Path | None = None) -> PromptFile:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise PromptError(path, 0, "", f"cannot read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise PromptError(path, 0, "", "not UTF-8 text") from None
    shown = str(path)
    if root is not None:
        try:
            shown = str(path.resolve().relative_to(root.resolve()))
        except ValueError:
            pass
    return parse(text, path, display_path=shown)


# ---- parsing -------------------------------------------------------------------------------

def _split_keyword(line: str) -> tuple[str, str] | None:
    s = line.strip()
    if not s.startswith("."):
        return None
    keyword, _, value = s.partition(" ")
    if keyword in KEYWORDS:
        return keyword, value.strip() if keyword != ".#" else value
    return None


def parse(text: str, path: Path | str, display_path: str = "") -> PromptFile:
    """Text → statements, checked for syntax. Raises PromptError on the first bad statement."""
    pf = PromptFile(Path(path), [], display_path=display_path or str(path))
    # Per statement: its lines; closed when the next statement starts.
    open_lines: list[str] | None = None
    raw: list[tuple[str, list[str], int, str]] = []
    for lno, line in enumerate(text.splitlines(), 1):
        kv = _split_keyword(line)
        if kv is None:
            if not line.strip() and open_lines is None:
                continue
            stripped = line.strip()
            if stripped.startswith(".") and NAME.match(stripped[1:]):
                pf.warnings.append(f"{pf.display_path}:{lno}: {stripped.split()[0]!r} is not a "
                                   "statement; it is read as text")
            if open_lines is not None:
                open_lines.append(line.rstrip())
                continue
            raw.append((".text", [line.rstrip()], lno, line.rstrip()))
            open_lines = raw[-1][1]
            continue
        keyword, value = kv
        raw.append((keyword, [value], lno, line.strip()))
        open_lines = raw[-1][1] if KEYWORDS[keyword] else None
    for keyword, lines, lno, source in raw:
        value = "\n".join(lines).strip("\n") if len(lines) > 1 else lines[0]
        if keyword == ".text":
            value = _trim_text(lines)
        elif KEYWORDS[keyword]:
            value = value.rstrip()
        pf.statements.append(Statement(keyword, value, lno, source))
    _check_syntax(pf)
    return pf


def _trim_text(lines: list[str]) -> str:
    # A bare text block keeps its inner layout; only blank lines at its ends go.
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return "\n".join(lines).strip("\n")


def _check_syntax(pf: PromptFile) -> None:
    if not any(st.keyword != ".#" for st in pf.statements):
        raise pf.error(None, "no statements: a prompt needs at least a `.user` line")
    seen_content = False
    for st in pf.statements:
        if st.keyword in UNSUPPORTED:
            raise pf.error(st, UNSUPPORTED[st.keyword])
        if st.keyword == ".debug":
            pf.warnings.append(f"{pf.display_path}:{st.line}: `.debug` is ignored by kep")
        if st.keyword == ".prompt":
            if seen_content:
                raise pf.error(st, "`.prompt` must be the first statement")
            pf.meta = parse_meta(pf, st)
        elif st.keyword == ".set":
            name, _, val = st.value.partition(" ")
            if not NAME.fullmatch(name) or not val.strip():
                raise pf.error(st, "`.set` needs a variable name and a value: .set NAME value")
        elif st.keyword == ".functions":
            function_entries(pf, st)
        elif st.keyword == ".cmd":
            parse_cmd(pf, st)
        elif st.keyword == ".tool_call":
            parse_tool_call(pf, st)
        elif st.keyword == ".tool_result":
            parse_tool_result_header(pf, st)
        elif st.keyword in (".include", ".image") and not st.value.strip():
            raise pf.error(st, f"`{st.keyword}` needs a file path")
        if st.keyword != ".#":
            seen_content = True


def parse_meta(pf: PromptFile, st: Statement) -> dict[str, Any]:
    """`.prompt {"name": …, "version": …, "params": {…}}`; keprompt's brace-less form
    `.prompt "name":"x", "version":"1"` is accepted too."""
    text = st.value.strip()
    if not text:
        return {}
    try:
        meta = json.loads(text if text.startswith("{") else "{" + text + "}")
    except RecursionError:
        raise pf.error(st, "`.prompt` JSON is nested too deeply") from None
    except json.JSONDecodeError as e:
        raise pf.error(st, f"`.prompt` is not valid JSON: {e.msg} (column {e.colno})") from None
    if not isinstance(meta, dict):
        raise pf.error(st, "`.prompt` must be a JSON object")
    if "params" in meta and not isinstance(meta["params"], dict):
        raise pf.error(st, '`.prompt` "params" must be an object of defaults')
    return meta


def function_entries(pf: PromptFile, st: Statement) -> list[str]:
    entries = [e for e in re.split(r"[,\s]+", st.value) if e]
    if not entries:
        raise pf.error(st, "`.functions` needs at least one name (name, module.*, module.name)")
    for e in entries:
        if not FUNCTION_ENTRY.fullmatch(e):
            raise pf.error(st, f"`.functions`: {e!r} is not name, module.* or module.name")
    return entries
