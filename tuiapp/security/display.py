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

Every screen and terminal export calls this, right where the text is handed to a widget or
written out; nothing else filters control characters.
"""

from __future__ import annotations

import re

# Control characters but tab and newline, DEL, C1 controls, lone surrogates, bidi controls.
_UNSAFE_CHARS = r"\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069"
_MARKS = r"\u200e\u200f\u061c"  # the implicit direction marks, for names and approvals
_UNSAFE = re.compile(f"[{_UNSAFE_CHARS}]")
_UNSAFE_MARKS = re.compile(f"[{_UNSAFE_CHARS}{_MARKS}]")
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
    return text.replace("\n", "").replace("\t", "").isprintable() or not _UNSAFE.search(text)


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
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
    if _plain(text) and not (marks and not text.isascii() and unsafe.search(text)):
        return text
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    if drop_escapes and "\x1b" in text:
        text = _ESCAPE.sub("", text)
    return unsafe.sub(_picture, text)


def printable_line(text: str) -> str:
    """printable(), for a place that shows one line (a name, a title): newlines and tabs are
    shown as spaces; direction marks are shown too."""
    return printable(text, marks=True).replace("\n", " ").replace("\t", " ")


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
