"""The display edge: no control sequence from outside kep reaches a terminal. Foreign text
(model text, tool names, tool output, stored sessions) is made printable once, where it is
shown: `kep run` text mode, `kep sessions show`, `kep sessions export`."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from tuiapp import cli
from tuiapp.commands.run import Printer
from tuiapp.conversation.store import Store
from tuiapp.security.display import StreamPrintable, json_printable, printable, printable_line
from tuiapp.vocab.events import (
    MessageAdded,
    Notice,
    PromptOutput,
    ProviderError,
    Retrying,
    TextDelta,
    ToolCallDecided,
    ToolCallRequested,
    ToolFinished,
)
from tuiapp.vocab.messages import Message, ToolCall

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # write the clipboard (paste-jacking)
OSC2 = "\x1b]2;pwned title\x1b\\"  # set the window title, ended by ST
CSI_C1 = "\x9b31m"  # 8-bit CSI: some terminals act on it
INVALID_UTF8 = b"bad \xff\xfe bytes".decode("utf-8", "surrogateescape")  # lone surrogates
HOSTILE = f"a{OSC52}b{OSC2}c{CSI_C1}d\x1be\x00f\x7fg{INVALID_UTF8}"
# What a terminal would act on: C0 but tab/newline, DEL, C1, surrogates (unencodable).
UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def assert_safe(text: str) -> None:
    bad = UNSAFE.findall(text)
    assert not bad, f"raw control characters reached the output: {bad!r}"
    text.encode("utf-8")  # and it can be written at all


# ---- the sanitiser --------------------------------------------------------------------

def test_control_sequences_are_made_visible_not_passed_or_hidden() -> None:
    out = printable(HOSTILE)
    assert_safe(out)
    assert "␛]52;c;ZWNobyBwd25lZA==␇" in out  # the attempt is visible, not silently gone
    assert "␛]2;pwned title␛\\" in out
    assert "␛e" in out and "␀f" in out and "␡g" in out
    assert "\N{REPLACEMENT CHARACTER}31m" in out
    assert "bad \N{REPLACEMENT CHARACTER}\N{REPLACEMENT CHARACTER} bytes" in out


def test_text_tabs_newlines_and_unicode_are_kept() -> None:
    text = "héllo\twörld\n日本語 ✔ — “quotes”\n\n```\ncode\n```\n"
    assert printable(text) is text  # nothing to do: the same object, no copy
    assert printable("one\r\ntwo\rthree") == "one\ntwo␍three"  # a lone CR would overwrite


def test_tool_output_drops_whole_escape_sequences() -> None:
    out = printable(f"\x1b[1;31mred\x1b[0m {OSC52}{OSC2}\x1b(Bplain{CSI_C1}", drop_escapes=True)
    assert out == "red plain\N{REPLACEMENT CHARACTER}31m"


def test_a_name_is_one_line() -> None:
    assert printable_line("to\x1bol\nname\tx") == "to␛ol name x"


def test_a_cr_lf_split_across_pieces_is_one_newline() -> None:
    clean = StreamPrintable()
    assert clean("line\r") + clean("\nnext\r") + clean("over") == "line\nnext␍over"


def test_json_keeps_the_data_and_escapes_what_json_dumps_leaves_raw() -> None:
    data = {"text": HOSTILE.replace(INVALID_UTF8, "") + "\ud800"}
    out = json_printable(json.dumps(data, ensure_ascii=False))
    assert_safe(out)
    assert json.loads(out) == data


BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
MARKS = "\u200e\u200f\u061c"


def test_bidi_overrides_and_isolates_are_shown_as_markers_everywhere() -> None:
    """Trojan Source: an override makes `x\u202egpj.txt` look like `xtxt.jpg`."""
    out = printable("rm /tmp/x\u202egpj.txt")
    assert out == "rm /tmp/x⟨U+202E⟩gpj.txt"
    assert printable(BIDI) == "".join(f"⟨U+{ord(c):04X}⟩" for c in BIDI)
    assert printable_line(f"to{BIDI}ol") == "to" + printable(BIDI) + "ol"
    assert printable(f"\x1b[1m{BIDI}", drop_escapes=True) == printable(BIDI)
    assert not re.search("[\u202a-\u202e\u2066-\u2069]", printable("é" + BIDI * 1000))


def test_direction_marks_are_kept_in_prose_and_shown_in_names() -> None:
    prose = "שלום \u200fworld\u200e!"
    assert printable(prose) is prose  # right-to-left prose uses them properly
    assert printable_line(f"rm{MARKS}") == "rm⟨U+200E⟩⟨U+200F⟩⟨U+061C⟩"
    assert printable(f"a{MARKS}", marks=True) == "a⟨U+200E⟩⟨U+200F⟩⟨U+061C⟩"
    # Other format characters (an emoji's zero-width joiner) are left alone.
    family = "👨\u200d👩\u200d👧"
    assert printable(family) is family and printable_line(family) == family


def test_json_escapes_bidi_controls_and_keeps_the_data() -> None:
    data = {"name": f"x{BIDI}{MARKS}y"}
    out = json_printable(json.dumps(data, ensure_ascii=False))
    assert not re.search("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]", out)
    assert json.loads(out) == data


def test_a_2mb_clean_text_costs_one_scan() -> None:
    big = "word " * 400_000
    assert printable(big) is big


def test_there_is_one_sanitiser() -> None:
    """No module but core.display strips or replaces escape characters itself."""
    root = Path(__file__).resolve().parents[2] / "tuiapp"
    offenders = [p.relative_to(root).as_posix() for p in root.rglob("*.py")
                 if p.name != "display.py"
                 and re.search(r"\\x1b|\\033|\\x9b|\\u001b", p.read_text(encoding="utf-8"))]
    assert offenders == []


# ---- kep run, text and JSON -------------------------------------------------------------

def _printer_run(as_json: bool) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    p = Printer(as_json, out, err)
    call = ToolCall("c1", f"evil{OSC2}tool", {"path": f"x{OSC52}\x9b"})
    for event in [TextDelta(f"Hello {OSC52}"), TextDelta(f"{OSC2}\r"), TextDelta("\nbye"),
                  ToolCallRequested(call, source=f"/p/evil{OSC2}"),
                  ToolCallDecided("c1", "deny", f"rule {OSC2}"),
                  ToolFinished("c1", call.name, "failed", 1, 5, f"out {OSC52}{INVALID_UTF8}"),
                  Retrying(1, 1.0, f"server said {OSC2}"),
                  ProviderError(f"bad {OSC52}{CSI_C1}", partial=True),
                  Notice(f"notice {OSC2}"), PromptOutput(f"printed {OSC52}"),
                  MessageAdded(Message("assistant", f"Hello {OSC52}"))]:
        p(event)
    return out.getvalue(), err.getvalue()


def test_kep_run_text_mode_prints_no_control_sequence() -> None:
    out, err = _printer_run(as_json=False)
    assert_safe(out)
    assert_safe(err)
    assert "Hello ␛]52;c;" in out and "title␛\\\nbye" in out  # CR LF across deltas: a newline
    assert "evil␛]2;pwned title" in err


def test_kep_run_json_mode_escapes_what_json_leaves_raw() -> None:
    out, _ = _printer_run(as_json=True)
    assert_safe(out)
    events = [json.loads(line) for line in out.splitlines()]
    assert any(CSI_C1 in json.dumps(e, ensure_ascii=False) for e in events)  # data unchanged


# ---- kep sessions show / export -----------------------------------------------------------

@pytest.fixture
def hostile_session(project: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(project)
    call = ToolCall("c1", f"to{OSC2}ol", {"file": f"a{OSC52}", "c1": "\x9b"})
    with Store.open() as store:
        sid = store.create_session(project, "fake/m")
        store.record(sid, MessageAdded(Message("user", f"please {OSC2}")))
        store.record(sid, ToolCallRequested(call, source="x"))
        store.record(sid, MessageAdded(Message("assistant", f"Sure {OSC52} {CSI_C1}",
                                               tool_calls=(call,))))
        store.record(sid, ToolFinished("c1", call.name, "ok", 0, 3, f"\x1b[31mred{OSC52}"))
        store.record(sid, MessageAdded(Message("tool", f"\x1b[31mred{OSC52}\x00",
                                               tool_call_id="c1", name=call.name)))
    return sid


def test_sessions_show_and_list_print_no_control_sequence(
        hostile_session: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["sessions", "show", hostile_session]) == 0
    out = capsys.readouterr().out
    assert_safe(out)
    assert "Sure ␛]52;c;ZWNobyBwd25lZA==␇" in out and "to␛]2;pwned title" in out
    assert cli.main(["sessions", "list"]) == 0
    assert_safe(capsys.readouterr().out)


@pytest.mark.parametrize("to_file", [False, True], ids=["stdout", "file"])
def test_sessions_export_markdown_keeps_the_text_never_raw_esc(
        hostile_session: str, to_file: bool, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "s.md"
    argv = ["sessions", "export", hostile_session, "--format", "md"]
    assert cli.main(argv + (["-o", str(target)] if to_file else [])) == 0
    text = target.read_text(encoding="utf-8") if to_file else capsys.readouterr().out
    assert_safe(text)
    assert "Sure ␛]52;c;ZWNobyBwd25lZA==␇" in text and "please ␛]2;pwned title" in text


def test_sessions_export_json_keeps_the_data_exactly(
        hostile_session: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["sessions", "export", hostile_session, "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert_safe(out)
    doc = json.loads(out)
    assert doc["messages"][1]["content"] == f"Sure {OSC52} {CSI_C1}"
