"""The display edge: foreign text made safe to show on a terminal, in one place.

Foreign text is anything kep did not write itself: model text and reasoning, tool output,
tool and file names, descriptions, error messages from servers, a stored session. Shown raw,
its control characters would reach the terminal: `ESC ] 52` writes the clipboard, `ESC ] 2`
sets the window title, a lone carriage return overwrites what is already on the line.

`printable(text)` keeps printable text, tabs and newlines and makes every other control
character visible instead: C0 controls, ESC and DEL become their Unicode control pictures
(ESC → ␛), C1 controls (U+0080–U+009F, 8-bit CSI and OSC among them) and lone surrogates
(invalid UTF-8 decoded with surrogateescape, or a JSON "\\ud800") become U+FFFD. A sequence
stays readable (`␛]2;title␇`), so a user sees that something tried. With `drop_escapes`,
whole escape sequences are removed first: for tool output, where colours and cursor moves
are common and harmless in intent, and noise when shown as text.

Bidi controls (Trojan Source): the embeddings and overrides U+202A–U+202E and the isolates
U+2066–U+2069 reorder what follows them, so a name or an argument could display differently
from what runs (`rm -rf /tmp/x⟨RLO⟩gpj.txt`). They are shown as a visible marker (⟨U+202E⟩),
in all foreign text. The implicit marks U+200E, U+200F and U+061C (LRM, RLM, ALM) cannot
reorder letters, only where neutral characters (spaces, punctuation) land, and right-to-left
prose uses them properly; so they are kept in prose, and marked too (`marks=True`) where what
is shown decides what runs or names a thing: names (printable_line) and approval blocks.

Invisible characters: zero-width spaces and joiners, word joiners, the BOM, tag characters
(U+E0000–U+E007F), Hangul fillers, the braille blank U+2800 and other format characters show
nothing, so a run of 3,000 of them pushes `; touch PWNED` off a panel, and one hides inside a
name. Each run is shown as one marker with its count (⟨U+2800 ×3000⟩). A lone zero-width
joiner or non-joiner is kept: emoji sequences and Persian words need them.

`Foreign` is the one type foreign text is shown as: `foreign(text)` applies all of the above,
and bounds the length (a 10 MB name is shown as its start and a count of the rest). The UI's
only conversion to a widget's content (ui.literal) takes it; nothing parses it as markup.

Every screen and terminal export calls this, right where the text is handed to a widget or
written out; nothing else filters control characters.
"""

from __future__ import annotations

import re

# Control characters but tab and newline, DEL, C1 controls, lone surrogates, bidi controls.
_UNSAFE_CHARS = r"\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069"
_MARKS = r"\u200e\u200f\u061c"  # the implicit direction marks, for names and approvals
# Where what is shown decides what runs (names, approvals), a run of this many spaces is a
# marker too: it would push the rest of an argument out of view.
_SPACE_RUN = 64
# Characters that show nothing (or a blank that is not a space): soft hyphen, combining
# grapheme joiner, Hangul and Khmer fillers, Mongolian vowel separator, zero-width space /
# (non-)joiner, word joiner and invisible operators, deprecated format controls, the braille
# blank, halfwidth Hangul filler, BOM, interlinear annotation, musical format controls, tags.
_INVISIBLE_CHARS = (r"\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200d\u2060-\u2064"
                    r"\u206a-\u206f\u2800\u3164\uffa0\ufeff\ufff9-\ufffb\U0001d173-\U0001d17a"
                    r"\U000e0000-\U000e007f")
_INVISIBLE = re.compile(f"[{_INVISIBLE_CHARS}]")
# A run of invisible characters, but never a lone joiner or non-joiner (U+200C, U+200D):
# emoji sequences and Persian words need them, so they are not even matched.
_ALONE_CHARS = _INVISIBLE_CHARS.replace(r"\u200b-\u200d", r"\u200b")  # no joiners
_RUN = f"[{_INVISIBLE_CHARS}]{{2,}}|[{_ALONE_CHARS}]"
_UNSAFE = re.compile(f"[{_UNSAFE_CHARS}]|{_RUN}")
_UNSAFE_MARKS = re.compile(f"[{_UNSAFE_CHARS}{_MARKS}]|{_RUN}| {{{_SPACE_RUN},}}")
_JOINER_PAIRS = ("\u200d\u200d", "\u200c\u200c", "\u200d\u200c", "\u200c\u200d")
# Invisible characters str.isprintable() calls printable (letters, symbols, marks): the
# fast path looks for these few by name.
_PRINTABLE_INVISIBLE = ("\u2800", "\u3164", "\u115f", "\u1160", "\uffa0", "\u17b4",
                        "\u17b5", "\u034f")
# A whole escape sequence: CSI (ESC [ … final), OSC/DCS/APC/PM/SOS (ESC ] … BEL or ST),
# or any other escape (ESC, intermediate bytes, one final byte: "ESC ( B", "ESC 7").
_ESCAPE = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]"
    r"|[\]P_^X][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|[ -/]*[0-~])")
REPLACEMENT = "\N{REPLACEMENT CHARACTER}"


# ASCII bytes a terminal shows as they are: printable characters, tab and newline.
_SHOWN_ASCII = bytes(range(0x20, 0x7F)) + b"\t\n"


def _plain(text: str) -> bool:
    """Nothing to make visible (the common case, checked at C speed): ASCII text is checked
    as bytes (isascii is O(1), translate ~0.4 ms per MB, the regex ten times slower)."""
    if text.isascii():
        return not text.encode("ascii").translate(None, _SHOWN_ASCII)
    flat = text.replace("\n", "").replace("\t", "")
    if "\u200d" in flat or "\u200c" in flat:
        if any(pair in flat for pair in _JOINER_PAIRS):
            return False
        # Lone joiners (emoji, Persian) are kept; next to any other invisible character,
        # that one fails isprintable() or is looked for below, and the regex decides.
        flat = flat.replace("\u200d", "").replace("\u200c", "")
    if flat.isprintable():  # C speed: most prose, in any script
        return not any(c in text for c in _PRINTABLE_INVISIBLE)
    return not _UNSAFE.search(text)


def _run_marker(run: str) -> str:
    """⟨U+2800 ×3000⟩ for a run of one invisible character, one marker per kind in a mix."""
    out, i = [], 0
    while i < len(run):
        j = i
        while j < len(run) and run[j] == run[i]:
            j += 1
        n = j - i
        out.append(f"⟨U+{ord(run[i]):04X}{f' ×{n}' if n > 1 else ''}⟩")
        i = j
    return "".join(out)


def _picture(match: re.Match[str]) -> str:
    found = match.group()
    if len(found) > 1 or _INVISIBLE.match(found):
        return _run_marker(found)
    code = ord(found)
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟ (ESC → ␛)
    if code == 0x7F:
        return "\N{SYMBOL FOR DELETE}"  # ␡
    if code > 0xFF and not 0xD800 <= code <= 0xDFFF:
        return f"⟨U+{code:04X}⟩"  # a bidi control: visible, named
    return REPLACEMENT


def printable(text: str, *, drop_escapes: bool = False, marks: bool = False) -> str:
    """`text` with nothing a terminal would act on: see the module docstring. A CR LF pair
    becomes a newline; a lone CR is shown (␍). `marks`: the direction marks LRM, RLM and
    ALM are shown too (names, approvals)."""
    unsafe = _UNSAFE_MARKS if marks else _UNSAFE
    if _plain(text) and not (marks and unsafe.search(text)):
        return text
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    if drop_escapes and "\x1b" in text:
        text = _ESCAPE.sub("", text)
    shown = unsafe.sub(_picture, text)
    return text if shown == text else shown  # only lone joiners: the same object


def printable_line(text: str) -> str:
    """printable(), for a place that shows one line (a name, a title): newlines and tabs are
    shown as spaces; direction marks are shown too."""
    return printable(text, marks=True).replace("\n", " ").replace("\t", " ")


DIFF_LINE_LIMIT = 1_000  # characters of one diff line shown (a 2 MB line is cut, and said)


def diff_line(text: str, limit: int = DIFF_LINE_LIMIT) -> str:
    """One line of a diff as shown: cut to `limit` characters (the rest counted), tabs as
    four spaces so indentation survives, every control shown (printable)."""
    cut = ""
    if len(text) > limit:
        cut, text = f" … ({len(text) - limit:,} more characters)", text[:limit]
    return printable(text, marks=True).replace("\n", " ").replace("\t", "    ") + cut


_DIFF_COLOURS = {"+": "32", "-": "31", "@": "36"}  # green, red, cyan (SGR)


def terminal_diff_line(line: str) -> str:
    """diff_line() for a terminal: added lines green, removed red, hunks cyan (kep's own SGR
    codes around text already made printable)."""
    text = diff_line(line)
    code = None if line.startswith(("+++ ", "--- ")) else _DIFF_COLOURS.get(line[:1])
    return f"\x1b[{code}m{text}\x1b[0m" if code else text


class StreamPrintable:
    """printable() for text that arrives in pieces: a CR at the end of one piece is held
    back until the next shows whether a newline follows it (CR LF is a newline)."""

    def __init__(self) -> None:
        self._cr = False

    def __call__(self, text: str) -> str:
        if self._cr:
            text, self._cr = "\r" + text, False
        if text.endswith("\r"):
            text, self._cr = text[:-1], True
        return printable(text)


_JSON_UNSAFE = re.compile(r"[\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069" + _MARKS + "]")


def json_printable(serialized: str) -> str:
    """JSON text (json.dumps with ensure_ascii=False) safe to print: DEL, C1 controls, lone
    surrogates and bidi controls, which json.dumps leaves raw, written as \\u escapes. The
    data read back is exactly the same (C0 controls are always escaped by json.dumps)."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", serialized)


# ---- the one type foreign text is shown as ----------------------------------------------

LINE_LIMIT = 2_000  # a name, a title, an option: one line, a screen's width many times over
TEXT_LIMIT = 50_000  # a description, an error, a help text


class Foreign(str):
    """Foreign text made fit to show: control characters visible, invisible runs as
    markers, bounded. Only `foreign()` makes one; a widget's content is built from these
    (ui.literal) and never read as markup."""

    __slots__ = ()


def foreign(text: object, *, line: bool = False, limit: int | None = None) -> Foreign:
    """`text` (anything: str() of it) as Foreign. `line`: one line (newlines and tabs as
    spaces, direction marks shown). Past `limit` characters the rest is counted, not shown:
    "⟨… 9,999,000 more characters⟩" (a cut is never silent)."""
    if isinstance(text, Foreign) and not line:
        return text
    raw = text if isinstance(text, str) else str(text)
    cap = limit if limit is not None else (LINE_LIMIT if line else TEXT_LIMIT)
    rest = len(raw) - cap
    if rest > 0:
        raw = raw[:cap]
    shown = printable_line(raw) if line else printable(raw)
    if rest > 0:
        shown += f"⟨… {rest:,} more characters⟩"
    return Foreign(shown)


def desktop_notification(route: str, text: str) -> str:
    """The terminal's desktop-notification sequence (OSC 9, or OSC 777 where `route` says so)
    carrying `text` made printable: nothing in it can end the sequence early or start one."""
    shown = printable_line(text)
    if route == "osc9":
        return f"\x1b]9;{shown}\x07"
    return f"\x1b]777;notify;kep;{shown.replace(';', ',')}\x07"
