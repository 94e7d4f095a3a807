"""keprompt `.prompt` files: parsing, lookup, `<<var>>` substitution, `.cmd` arguments.

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

import ast
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
# Statements whose text is the author's template (substituted when the statement runs).
SUBSTITUTED = {".system", ".user", ".assistant", ".text", ".set", ".include", ".image", ".print",
               ".tool_result"}
BUILTIN_VARIABLES = {"Prefix", "Postfix", "VM", "last_response"}
KEPROMPT_SETTINGS = {"model", "llm_options"}  # params keprompt reads itself; kep does not
NAME = re.compile(r"[A-Za-z_][\w-]*")
FUNCTION_ENTRY = re.compile(r"[\w-]+(\.(\*|[\w-]+))?")
DEFAULT_PREFIX, DEFAULT_POSTFIX = "<<", ">>"


class PromptError(Exception):
    """A problem in a `.prompt` file, naming the file, the line and the statement."""

    def __init__(self, file: Path | str, line: int, statement: str, message: str) -> None:
        self.file, self.line, self.statement, self.message = str(file), line, statement, message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        shown = self.statement if len(self.statement) <= 120 else self.statement[:117] + "..."
        return f"{where}: {self.message}" + (f"\n    {shown}" if shown else "")


class PromptNotFound(LookupError):
    pass


@dataclass(frozen=True)
class Statement:
    keyword: str  # ".user", ".text", …
    value: str
    line: int  # 1-based line of the keyword
    source: str  # the first source line, for messages


@dataclass(frozen=True)
class Variable:
    name: str
    default: Any = None  # from `.prompt {"params": …}`
    has_default: bool = False
    line: int = 0  # first use


@dataclass
class PromptFile:
    path: Path
    statements: list[Statement]
    meta: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    display_path: str = ""

    @property
    def name(self) -> str:
        return str(self.meta.get("name") or self.path.stem)

    @property
    def params(self) -> dict[str, Any]:
        params = self.meta.get("params")
        return dict(params) if isinstance(params, dict) else {}

    def error(self, stmt: Statement | None, message: str) -> PromptError:
        if stmt is None:
            return PromptError(self.display_path or self.path, 0, "", message)
        return PromptError(self.display_path or self.path, stmt.line, stmt.source, message)

    def variables(self) -> list[Variable]:
        """What a user can set: every param (with its default), then every `<<name>>` the
        file reads that nothing in the file defines (no default: must be given). keprompt's
        own `model`/`llm_options` params are left out unless the text uses them."""
        used = {ref.split(".")[0] for st in self.statements
                for text in statement_templates(self, st) for ref in references(text)}
        out = {k: Variable(k, v, True) for k, v in self.params.items()
               if k not in KEPROMPT_SETTINGS or k in used}
        for name, line in free_variables(self).items():
            out.setdefault(name, Variable(name, line=line))
        return list(out.values())

    def missing(self, values: Mapping[str, Any]) -> list[Variable]:
        return [v for v in self.variables() if not v.has_default and v.name not in values]


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


# ---- variables -----------------------------------------------------------------------------

class UndefinedVariable(KeyError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def variable_pattern(prefix: str, postfix: str) -> re.Pattern[str]:
    return re.compile(re.escape(prefix) + r"([A-Za-z_][\w.-]*)" + re.escape(postfix))


def render_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def lookup(name: str, values: Mapping[str, Any]) -> Any:
    """`a` or `a.b.c` (dict access into a JSON param)."""
    head, *rest = name.split(".")
    if head not in values:
        raise UndefinedVariable(name)
    value = values[head]
    for key in rest:
        if not isinstance(value, dict) or key not in value:
            raise UndefinedVariable(name)
        value = value[key]
    return value


def substitute(text: str, values: Mapping[str, Any]) -> str:
    """Replace `<<name>>` once, left to right. Inserted values are never scanned again, so a
    value holding `<<x>>` (a model reply, a file) comes through as it is."""
    pattern = variable_pattern(str(values.get("Prefix", DEFAULT_PREFIX)),
                               str(values.get("Postfix", DEFAULT_POSTFIX)))
    return pattern.sub(lambda m: render_value(lookup(m.group(1), values)), text)


def references(text: str, prefix: str = DEFAULT_PREFIX,
               postfix: str = DEFAULT_POSTFIX) -> list[str]:
    return [m.group(1) for m in variable_pattern(prefix, postfix).finditer(text)]


def statement_templates(pf: PromptFile, st: Statement) -> list[str]:
    """The author text of a statement that gets substituted."""
    if st.keyword in SUBSTITUTED:
        if st.keyword == ".set":
            return [st.value.partition(" ")[2]]
        if st.keyword == ".tool_result":
            return [st.value.partition("\n")[2]]
        return [st.value]
    if st.keyword == ".cmd":
        return [v for v in parse_cmd(pf, st).arguments.values() if isinstance(v, str)]
    return []


def free_variables(pf: PromptFile) -> dict[str, int]:
    """Names the file reads but never defines (→ line of first use). Params count as defined
    only through Variable defaults, so they are left out here by the caller."""
    defined = set(BUILTIN_VARIABLES) | set(pf.params)
    for st in pf.statements:
        if st.keyword == ".set":
            defined.add(st.value.partition(" ")[0])
        elif st.keyword == ".cmd" and parse_cmd(pf, st).target:
            defined.add(parse_cmd(pf, st).target or "")
    free: dict[str, int] = {}
    prefix, postfix = DEFAULT_PREFIX, DEFAULT_POSTFIX
    for st in pf.statements:
        for text in statement_templates(pf, st):
            for ref in references(text, prefix, postfix):
                root = ref.split(".")[0]
                if root not in defined:
                    free.setdefault(root, st.line)
        if st.keyword == ".set":
            name, _, val = st.value.partition(" ")
            if name == "Prefix":
                prefix = val.strip()
            elif name == "Postfix":
                postfix = val.strip()
    return free


# ---- .cmd / .tool_call ---------------------------------------------------------------------

@dataclass(frozen=True)
class CmdCall:
    name: str
    arguments: dict[str, Any]
    target: str | None = None  # `.cmd f(…) as var`
    # Source text of every argument not written as a quoted string, for schema coercion.
    raw: Mapping[str, str] = field(default_factory=dict)


def parse_cmd(pf: PromptFile, st: Statement) -> CmdCall:
    text = st.value.strip()
    target = None
    m = re.search(r"\)\s+as\s+(\S+)\s*$", text)
    if m:
        target = m.group(1)
        if not NAME.fullmatch(target):
            raise pf.error(st, f"`.cmd … as NAME`: {target!r} is not a variable name")
        text = text[: m.start() + 1]
    return _parse_call_text(pf, st, text, target, ".cmd")


def parse_tool_call(pf: PromptFile, st: Statement) -> tuple[CmdCall, str]:
    text, sep, call_id = st.value.strip().rpartition(" id=")
    if not sep or not call_id.strip():
        raise pf.error(st, "`.tool_call` needs `fn(arg=value, …) id=CALL_ID`")
    return _parse_call_text(pf, st, text.strip(), None, ".tool_call"), call_id.strip()


def parse_tool_result_header(pf: PromptFile, st: Statement) -> tuple[str, str]:
    header = st.value.partition("\n")[0]
    fields = dict(p.split("=", 1) for p in header.split() if "=" in p)
    if not fields.get("id") or not fields.get("name"):
        raise pf.error(st, "`.tool_result` needs `id=CALL_ID name=FUNCTION` on its first line")
    return fields["id"], fields["name"]


def _parse_call_text(pf: PromptFile, st: Statement, text: str, target: str | None,
                     kw: str) -> CmdCall:
    m = re.fullmatch(r"([A-Za-z_][\w-]*)\s*\((.*)\)", text, re.S)
    if not m:
        raise pf.error(st, f"`{kw}` needs a call: {kw} function(arg=value, …)")
    name, inner = m.group(1), m.group(2)
    arguments: dict[str, Any] = {}
    raws: dict[str, str] = {}
    try:
        parts = list(split_arguments(inner))
    except ValueError as e:
        raise pf.error(st, f"`{kw}` arguments: {e}") from None
    for part in parts:
        key, eq, raw = part.partition("=")
        key, raw = key.strip(), raw.strip()
        if not eq or not NAME.fullmatch(key):
            raise pf.error(st, f"`{kw}` arguments are name=value; got {part.strip()!r}")
        if key in arguments:
            raise pf.error(st, f"`{kw}`: argument {key!r} given twice")
        value = literal(raw)
        arguments[key] = value
        if not (isinstance(value, str) and raw[:1] in "\"'"):
            raws[key] = raw
    return CmdCall(name, arguments, target, raws)


def split_arguments(text: str) -> Iterable[str]:
    """Split on top-level commas: quotes, brackets and braces protect theirs."""
    depth, quote, start, i = 0, "", 0, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            if text[start:i].strip():
                yield text[start:i]
            start = i + 1
        i += 1
    if quote:
        raise ValueError(f"unclosed {quote} quote")
    if depth:
        raise ValueError("unbalanced brackets")
    if text[start:].strip():
        yield text[start:]


JSON_WORDS = {"true": True, "false": False, "null": None}


def literal(raw: str) -> Any:
    """A Python (or JSON) literal when it is one; otherwise the bare text, as keprompt
    authors write it (`filename=data/x.txt`, `filename=<<file>>`)."""
    if raw in JSON_WORDS:
        return JSON_WORDS[raw]
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return raw


def coerce(value: Any, raw: str | None, schema: Mapping[str, Any]) -> Any:
    """Fit an unquoted argument to the tool's schema: `1.10` stays "1.10" for a string
    parameter, a bare `<<n>>` that became "5" is 5 for an integer one."""
    kind = schema.get("type")
    if raw is None:
        return value
    if kind == "string" and not isinstance(value, str):
        return raw
    if not isinstance(value, str):
        return value
    try:
        if kind == "integer":
            return int(value)
        if kind == "number":
            return float(value)
    except ValueError:
        return value
    if kind == "boolean" and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value
