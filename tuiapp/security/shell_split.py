"""A command line split into the simple commands it runs, for approval rules (README
"Shell-aware rules").

`split(line)` parses with bashlex (a port of bash's own grammar, so `;`, `&&`, `||`, `|`, `&`,
newlines, subshells, groups, `$( )`, backticks, process substitution, redirections, loops and
conditionals are read as bash reads them) and returns every simple command it found, nested
ones included, each as the exact text of the line it came from (redirections are part of that
text, so an allow rule sees them).

Whatever the parser can't make certain is reported in `Split.unsure`, and the caller must
never allow such a line: a parse error (unbalanced quotes, syntax bashlex does not know such
as `$(( ))`, `case`, `[[ ]]`), a command name that is computed (`$X`, `$(…)`, a glob, a brace
expansion), commands that run a string or another command given as arguments (`eval`,
`source`, `exec`, `trap`, `xargs`, `env`, `sudo`, `find -exec` …), a shell reading a script or
its stdin (a here-doc into `sh`), a function definition, expansions bashlex leaves unread
(`${x:-$(…)}`, here-doc bodies), and anything too big or too deep to parse quickly.
`sh -c 'LITERAL'` (also bash, dash, zsh, ksh) is parsed again, and its commands count instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

MAX_CHARS = 4096  # longer command lines are asked about, not parsed (~0.3 s at this size)
MAX_PARENS = 100  # nesting beyond this exhausts the parser's stack: asked about
MAX_DEPTH = 3  # nested `sh -c '…'` parsed at most this deep
MAX_NODES = 5000  # nodes walked in one line; more is "unsure"

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh",
                    "busybox", "rbash", "yash", "pwsh"})
# They run a string as code, or change what later commands mean.
RUNS_STRING = frozenset({"eval", "source", ".", "exec", "trap", "alias", "enable", "builtin",
                         "command", "fc", "coproc", "let"})
# They run their arguments as another command, which a rule on the first word can't see.
WRAPPERS = frozenset({"env", "sudo", "doas", "su", "runuser", "xargs", "nohup", "nice",
                      "ionice", "timeout", "setsid", "stdbuf", "chroot", "unshare", "nsenter",
                      "flock", "taskset", "watch", "time", "strace", "ltrace", "script",
                      "parallel", "chrt", "systemd-run", "pkexec", "sg", "newgrp"})
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_PLAIN_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]|[@*#?$!-]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u2028\u2029\ufeff]")


@dataclass(frozen=True)
class Split:
    commands: tuple[str, ...]  # each simple command's text, in the order met
    unsure: tuple[str, ...] = ()  # why the line can't be allowed, one phrase each

    @property
    def certain(self) -> bool:
        return not self.unsure


@dataclass
class _Walk:
    source: str
    depth: int
    commands: list[str] = field(default_factory=list)
    unsure: list[str] = field(default_factory=list)
    nodes: int = 0

    def doubt(self, why: str) -> None:
        if why not in self.unsure:
            self.unsure.append(why)


def warm() -> None:
    """Import the parser now (about half a second, once), so the first shell call a user
    waits on does not pay for it; the TUI runs this in a thread after its first frame."""
    import bashlex  # noqa: F401


def split(line: str) -> Split:
    """The simple commands of `line`, and what made the split unsure (if anything)."""
    walk = _Walk(line, 0)
    _parse_into(walk, line)
    if not walk.commands and not walk.unsure:
        walk.doubt("no command found in it")  # never "all of none allowed"
    return Split(tuple(walk.commands), tuple(walk.unsure))


def _parse_into(walk: _Walk, line: str) -> None:
    if len(line) > MAX_CHARS:
        walk.doubt(f"the command line is too long to check ({len(line):,} characters)")
        return
    if _CONTROL.search(line):
        walk.doubt("the command line holds control characters")
        return
    if "\r" in line:
        walk.doubt("the command line holds a carriage return")
        return
    if line.count("(") + line.count("`") > MAX_PARENS:
        walk.doubt("the command line nests too deeply to check")
        return
    if not line.strip():
        walk.doubt("the command line is empty")
        return
    try:
        import bashlex  # imported here: only shell-like calls pay for it
        import bashlex.errors

        trees = bashlex.parse(line)
    except (bashlex.errors.ParsingError, NotImplementedError) as e:
        walk.doubt(f"the shell parser can't read it ({_short(str(e))})")
        return
    except (RecursionError, IndexError, AttributeError, TypeError, ValueError, AssertionError,
            KeyError) as e:  # bashlex's own failures on odd input: not certain either
        walk.doubt(f"the shell parser failed on it ({type(e).__name__})")
        return
    sub = _Walk(line, walk.depth)
    for tree in trees:
        _visit(sub, tree)
    walk.commands.extend(sub.commands)
    for why in sub.unsure:
        walk.doubt(why)


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _visit(walk: _Walk, root: Any) -> None:
    """Every node under `root`, without recursion (a hostile line can nest deeply)."""
    stack = [root]
    while stack:
        node = stack.pop()
        walk.nodes += 1
        if walk.nodes > MAX_NODES:
            walk.doubt("the command line is too complex to check")
            return
        kind = getattr(node, "kind", None)
        if kind == "command":
            _command(walk, node, stack)
        elif kind in ("list", "pipeline", "compound", "if", "for", "while", "until"):
            stack.extend(reversed(_children(node)))
        elif kind in ("commandsubstitution", "processsubstitution"):
            stack.append(node.command)
        elif kind in ("word", "assignment"):
            _word(walk, node, stack)
        elif kind == "redirect":
            _redirect(walk, node, stack)
        elif kind == "parameter":
            if not _PLAIN_PARAM.fullmatch(node.value):
                walk.doubt(f"an expansion kep can't read: ${{{_short(node.value, 40)}}}")
        elif kind == "function":
            walk.doubt("it defines a shell function")
            stack.extend(reversed(_children(node)))
        elif kind in ("reservedword", "operator", "pipe", "tilde"):
            pass
        elif kind == "heredoc":
            if "$" in node.value or "`" in node.value:
                walk.doubt("a here-document expands text")
        else:
            walk.doubt(f"shell syntax kep does not check ({kind})")


def _children(node: Any) -> list[Any]:
    parts = getattr(node, "parts", None)
    if parts is None:
        parts = getattr(node, "list", None)
    return list(parts or [])


def _command(walk: _Walk, node: Any, stack: list[Any]) -> None:
    parts = _children(node)
    words = [p for p in parts if p.kind == "word"]
    stack.extend(reversed(parts))  # substitutions inside words and redirections run too
    text, writes = _without_writes(walk.source, node, parts)
    if not words:
        if text:
            walk.commands.append(text)  # only assignments and input redirections
        walk.commands.extend(writes)
        return
    head = words[0]
    head_text = walk.source[head.pos[0]: head.pos[1]]
    if any(p.kind != "tilde" for p in getattr(head, "parts", []) or []):
        walk.doubt(f"the command name is computed ({_short(head_text, 40)})")
    elif head_text != "[" and re.search(r"[*?\[\]{}]", head_text):
        walk.doubt(f"the command name is a pattern ({_short(head_text, 40)})")
    name = head.word.rsplit("/", 1)[-1]
    literal = [w.word for w in words]
    if name in SHELLS:
        inner = _shell_string(words)
        if inner is None or walk.depth >= MAX_DEPTH:
            walk.doubt(f"it runs a shell ({name}) on code kep can't read")
        else:
            nested = _Walk(inner, walk.depth + 1)
            _parse_into(nested, inner)
            walk.commands.extend(nested.commands)
            for why in nested.unsure:
                walk.doubt(why)
            walk.commands.extend(writes)
            return
    elif name in RUNS_STRING:
        walk.doubt(f"`{name}` runs code given as text")
    elif name in WRAPPERS:
        walk.doubt(f"`{name}` runs another command given in its arguments")
    elif name == "find" and any(w in FIND_EXEC for w in literal):
        walk.doubt("`find -exec` runs another command")
    walk.commands.append(text)
    walk.commands.extend(writes)  # each write to a file is a command of its own to allow


WRITES = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})


def _without_writes(source: str, node: Any, parts: list[Any]) -> tuple[str, list[str]]:
    """The command's text without its redirections that write to a file, and those
    redirections as texts of their own (`> ~/.bashrc`): an allow rule for `echo` must not
    cover what echo's output overwrites. Duplicating a descriptor (`2>&1`) or writing to
    /dev/null writes nothing and stays in the command's text."""
    start, end = node.pos
    pieces, writes, at = [], [], start
    for part in parts:
        if part.kind != "redirect" or part.type not in WRITES:
            continue
        target = getattr(part, "output", None)
        if not hasattr(target, "kind"):
            continue  # `>&2`: a descriptor, no file
        if target.word in HARMLESS_TARGETS and not getattr(target, "parts", None):
            continue
        pieces.append(source[at: part.pos[0]].strip())
        op_end = target.pos[0]
        writes.append(f"{source[part.pos[0]: op_end].strip()} {source[op_end: part.pos[1]]}")
        at = part.pos[1]
    pieces.append(source[at:end].strip())
    return " ".join(p for p in pieces if p), writes


def _shell_string(words: list[Any]) -> str | None:
    """The code of `sh -c 'CODE' [args…]` when CODE is one literal word, else None."""
    if len(words) < 3 or words[1].word != "-c":
        return None
    code = words[2]
    if getattr(code, "parts", None):
        return None  # expansions inside: what runs is only known at run time
    return str(code.word)


def _word(walk: _Walk, node: Any, stack: list[Any]) -> None:
    text = walk.source[node.pos[0]: node.pos[1]]
    if node.kind == "word" and _brace_expansion(text):
        walk.doubt(f"a brace expansion ({_short(text, 40)})")
    stack.extend(reversed(getattr(node, "parts", []) or []))


def _redirect(walk: _Walk, node: Any, stack: list[Any]) -> None:
    for attr in ("output", "heredoc"):
        child = getattr(node, attr, None)
        if child is not None and hasattr(child, "kind"):
            stack.append(child)


def _brace_expansion(text: str) -> bool:
    """Whether an unquoted `{a,b}` or `{1..3}` is in `text` (bash turns it into many words)."""
    quote = ""
    depth_start = -1
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c == "\\":
            i += 2
            continue
        elif c in "'\"":
            quote = c
        elif c == "{":
            depth_start = i
        elif c == "}" and depth_start >= 0:
            inner = text[depth_start + 1: i]
            if "," in inner or ".." in inner:
                return True
            depth_start = -1
        i += 1
    return False
