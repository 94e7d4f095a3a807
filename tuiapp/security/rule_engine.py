"""Rule regexes in linear time (issue 24 item 5).

A rule's regex is written in Python's syntax. kep translates it, through Python's own parser,
into RE2 syntax with the same meaning, and runs it with RE2 (the `google-re2` binding), whose
time is linear in the text: `rm rm rm …` can't make it backtrack. `\\w`, `\\d` and `\\s` become
the exact Unicode sets Python uses; `$` keeps Python's "or before a final newline".

What RE2 can't express (backreferences, lookaround, atomic groups, possessive repeats, `\\b`
against non-ASCII text, whose word characters RE2 sees differently) runs in Python's engine in
a helper process with a deadline (see rule_fallback): past it the search counts as "matched"
for deny and ask rules and "not matched" for allow rules, so a timeout asks, never allows.
"""

from __future__ import annotations

import array
import functools
import re
import re._constants as _c  # Python's own regex parser: the meaning is Python's
import re._parser as _p
from dataclasses import dataclass

try:  # a platform without the binding's wheel still works, every rule bounded by time
    import re2 as _re2
except ImportError:  # pragma: no cover - the binding is a dependency
    _re2 = None

MAX_REPEAT = 1000  # RE2's limit on a counted repeat
_FLAGS = ((_c.SRE_FLAG_IGNORECASE, "i"), (_c.SRE_FLAG_MULTILINE, "m"), (_c.SRE_FLAG_DOTALL, "s"))


class Unsupported(Exception):
    """A construct RE2 can't run with Python's meaning."""


@dataclass(frozen=True)
class Compiled:
    """A pattern as RE2 runs it: `main` must be found and, for each leading lookahead of
    Python's pattern, `must` found / `must_not` not found at the start."""

    main: object
    must: tuple[object, ...] = ()
    must_not: tuple[object, ...] = ()

    def search(self, text: str) -> bool:
        return (all(m.search(text) is not None for m in self.must)  # type: ignore[attr-defined]
                and not any(m.search(text) is not None for m in self.must_not)  # type: ignore[attr-defined]
                and self.main.search(text) is not None)  # type: ignore[attr-defined]


@functools.lru_cache(maxsize=1024)
def compiled(pattern: str, unicode_text: bool, wider_ok: bool = False) -> Compiled | None:
    """RE2's form of `pattern` for ASCII text or any text; None: Python's engine only.
    `wider_ok` (deny and ask rules): on non-ASCII text a `\b` next to an ASCII letter or
    digit of the pattern may run in RE2, whose `\b` there matches wherever Python's does and
    also next to a non-ASCII letter: such a rule matches a little more often, never less."""
    if _re2 is None:
        return None
    parsed = _p.parse(pattern, 0)  # (an invalid pattern raises re.error)
    flags = parsed.state.flags
    try:
        items = list(parsed)
        ahead: list[tuple[bool, str]] = []
        if ((items and items[0] == (_c.AT, _c.AT_BEGINNING_STRING)) or (items and items[0] == (
                _c.AT, _c.AT_BEGINNING) and not flags & _c.SRE_FLAG_MULTILINE)):
            # `^(?!.*\.\.)…`: leading lookaheads at the start are searches of their own.
            while len(items) > 1 and items[1][0] in (_c.ASSERT, _c.ASSERT_NOT) and (
                    items[1][1][0] == 1):
                op, (_direction, sub) = items.pop(1)
                ahead.append((op is _c.ASSERT, _Translator(flags, unicode_text).seq(sub)))
            if ahead and unicode_text and wider_ok:
                raise Unsupported("a lookahead of a deny rule: narrower is not wider")
        t = _Translator(flags, unicode_text)
        body = t.seq(items)
        if t.boundary and unicode_text and not (wider_ok and t.boundary_wider_only):
            raise Unsupported(r"\b on non-ASCII text")
        prefix = "".join(f for bit, f in _FLAGS if flags & bit)
        head = f"(?{prefix})" if prefix else ""
        options = _re2.Options()
        options.max_mem = 64 << 20
        main = _re2.compile(head + body, options)
        checks = [(want, _re2.compile(rf"{head}\A(?:{sub})", options)) for want, sub in ahead]
    except (Unsupported, _re2.error, ValueError, TypeError, OverflowError):
        return None
    return Compiled(main, tuple(c for want, c in checks if want),
                    tuple(c for want, c in checks if not want))


def search(pattern: str, text: str) -> bool | None:
    """Whether `pattern` is found in `text`; None when it could not be decided in time."""
    return search_any(pattern, (text,))


def search_any(pattern: str, texts: tuple[str, ...] | list[str],
               timeout: float | None = None, *, wider_ok: bool = False) -> bool | None:
    """Whether `pattern` is found in any of `texts`; None when that could not be decided in
    time (the caller treats it as the cautious answer). `wider_ok`: see compiled()."""
    slow = []
    for text in texts:
        c = compiled(pattern, not text.isascii(), wider_ok)
        if c is None:
            slow.append(text)
        elif c.search(text):
            return True
    if not slow:
        return False
    from tuiapp.security import rule_fallback

    return rule_fallback.search_any(pattern, slow, timeout)


def fullmatch(pattern: str, text: str) -> bool | None:
    flags = re.match(r"(?:\(\?[aiLmsux]+\))*", pattern)
    head = flags.group(0) if flags else ""  # global flags must stay at the very start
    return search(rf"{head}\A(?:{pattern[len(head):]})\Z", text)


def is_linear(pattern: str) -> bool:
    """Whether every search of `pattern` runs in RE2 (no time bound needed)."""
    return compiled(pattern, False) is not None and compiled(pattern, True) is not None


# ---- Python's regex tree → RE2 syntax -----------------------------------------------------


def _char(c: int) -> str:
    return f"\\x{{{c:x}}}"


@functools.cache
def _category_set(name: str) -> str:
    """The exact code points Python's `\\w` / `\\d` / `\\s` match, as RE2 set items."""
    probe = {"word": r"\w+", "digit": r"\d+", "space": r"\s+"}[name]
    out = []
    for base, end in ((0, 0xD800), (0xE000, 0x110000)):  # (no surrogates in text)
        every = array.array("I", range(base, end)).tobytes().decode("utf-32-le")
        out += [(base + m.start(), base + m.end() - 1) for m in re.finditer(probe, every)]
    return "".join(_char(a) if a == b else f"{_char(a)}-{_char(b)}" for a, b in out)


_ASCII_SETS = {"word": "A-Za-z0-9_", "digit": "0-9", "space": r"\t\n\x0b\x0c\r\x20"}
# What Python's Unicode classes match among ASCII characters (\s also takes \x1c-\x1f).
_ASCII_TEXT_SETS = {**_ASCII_SETS, "space": r"\t\n\x0b\x0c\r\x1c-\x1f\x20"}


class _Translator:
    def __init__(self, flags: int, unicode_text: bool) -> None:
        # For ASCII text, Python's classes are these ASCII sets; for other text, its
        # Unicode sets (unless the pattern says (?a)).
        self.ascii = bool(flags & _c.SRE_FLAG_ASCII) or not unicode_text
        self.ascii_flag = bool(flags & _c.SRE_FLAG_ASCII)
        if flags & _c.SRE_FLAG_LOCALE:
            raise Unsupported("locale")
        self.boundary = False
        self.boundary_wider_only = True  # every \b sits next to an ASCII word literal

    def _set(self, name: str) -> str:
        if self.ascii:
            return _ASCII_SETS[name] if self.ascii_flag else _ASCII_TEXT_SETS[name]
        return _category_set(name)

    def _category(self, cat: object, negated_ok: bool) -> tuple[str, bool]:
        """(set items, negated) for a CATEGORY_* code."""
        names = {_c.CATEGORY_WORD: ("word", False), _c.CATEGORY_NOT_WORD: ("word", True),
                 _c.CATEGORY_DIGIT: ("digit", False), _c.CATEGORY_NOT_DIGIT: ("digit", True),
                 _c.CATEGORY_SPACE: ("space", False), _c.CATEGORY_NOT_SPACE: ("space", True)}
        if cat not in names:
            raise Unsupported(str(cat))
        name, negated = names[cat]
        if negated and not negated_ok:
            raise Unsupported("a negated class inside a set")
        return self._set(name), negated

    def seq(self, items: object) -> str:
        items = list(items)  # type: ignore[call-overload]
        out = []
        for i, (op, av) in enumerate(items):
            if op is _c.AT and av is _c.AT_END and i != len(items) - 1:
                raise Unsupported("$ before more pattern")
            if op is _c.AT and av in (_c.AT_BOUNDARY, _c.AT_NON_BOUNDARY):
                near = [items[j] for j in (i - 1, i + 1) if 0 <= j < len(items)]
                if av is _c.AT_NON_BOUNDARY or not any(
                        o is _c.LITERAL and chr(a).isascii() and (chr(a).isalnum() or a == 95)
                        for o, a in near):
                    self.boundary_wider_only = False
            out.append(self.item(op, av))
        return "".join(out)

    def item(self, op: object, av: object) -> str:
        c = _c
        if op is c.LITERAL:
            return _char(av)  # type: ignore[arg-type]
        if op is c.NOT_LITERAL:
            return f"[^{_char(av)}]"  # type: ignore[arg-type]
        if op is c.ANY:
            return "."
        if op is c.IN:
            return self.in_set(av)  # type: ignore[arg-type]
        if op is c.BRANCH:
            return "(?:" + "|".join(self.seq(b) for b in av[1]) + ")"  # type: ignore[index]
        if op is c.SUBPATTERN:
            _group, add, remove, sub = av  # type: ignore[misc]
            flags = ""
            for bit, f in ((c.SRE_FLAG_IGNORECASE, "i"), (c.SRE_FLAG_MULTILINE, "m"),
                           (c.SRE_FLAG_DOTALL, "s")):
                if add & bit:
                    flags += f
            off = "".join(f for bit, f in ((c.SRE_FLAG_IGNORECASE, "i"),
                                            (c.SRE_FLAG_MULTILINE, "m"),
                                            (c.SRE_FLAG_DOTALL, "s")) if remove & bit)
            if (add | remove) & ~(c.SRE_FLAG_IGNORECASE | c.SRE_FLAG_MULTILINE
                                  | c.SRE_FLAG_DOTALL):
                raise Unsupported("flags")
            head = flags + (f"-{off}" if off else "")
            return f"(?{head}:{self.seq(sub)})"
        if op in (c.MAX_REPEAT, c.MIN_REPEAT):
            lo, hi, sub = av  # type: ignore[misc]
            if lo > MAX_REPEAT or (hi is not c.MAXREPEAT and hi > MAX_REPEAT):
                raise Unsupported("a counted repeat over 1000")
            body = f"(?:{self.seq(sub)})"
            count = (f"{{{lo},}}" if hi is c.MAXREPEAT else
                     f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}")
            return body + count + ("?" if op is c.MIN_REPEAT else "")
        if op is c.AT:
            if av is c.AT_BEGINNING:
                return "(?:^)"
            if av is c.AT_BEGINNING_STRING:
                return r"\A"
            if av is c.AT_END:
                # Python's $: at the end, or before a final newline (or each line's end in
                # multiline mode, as RE2's).
                return r"(?:$|\n\z)"
            if av is c.AT_END_STRING:
                return r"\z"
            if av in (c.AT_BOUNDARY, c.AT_NON_BOUNDARY):
                self.boundary = True  # same meaning as Python's for ASCII text only
                return r"\b" if av is c.AT_BOUNDARY else r"\B"
        raise Unsupported(str(op))

    def in_set(self, items: list[tuple[object, object]]) -> str:
        c = _c
        negate = bool(items) and items[0][0] is c.NEGATE
        body = items[1:] if negate else items
        if len(body) == 1 and body[0][0] is c.CATEGORY:
            chars, negated = self._category(body[0][1], True)
            return f"[{'^' if negated != negate else ''}{chars}]"
        parts = []
        for op, av in body:
            if op is c.LITERAL:
                parts.append(_char(av))  # type: ignore[arg-type]
            elif op is c.RANGE:
                lo, hi = av  # type: ignore[misc]
                parts.append(f"{_char(lo)}-{_char(hi)}")
            elif op is c.CATEGORY:
                parts.append(self._category(av, False)[0])
            else:
                raise Unsupported(str(op))
        return f"[{'^' if negate else ''}{''.join(parts)}]"
