"""Issue 24 item 7: no English word typed at an approval writes config or answers several
calls. Every word of a list of common words (tests/fixtures/common_words.txt), as typed in
lower case, Capitalized and in CAPITALS, alone, followed by a space, by Enter and by a digit
after a space, is fed to the panel's key reader as if each key came after the guard time
(the worst case); the only answers it may give are the one-call ones (y, n, e)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuiapp.ui.widgets.approval_keys import CHOOSE, CONFIRMED, SINGLE, KeyReader

WORDS = [w for w in (Path(__file__).parent.parent / "fixtures" / "common_words.txt")
         .read_text().split("\n") if w and not w.startswith("#")]


def keys_of(text: str) -> list[tuple[str, str | None]]:
    return [("enter", None) if c == "\n" else (c if c.isalnum() else "x", c) for c in text]


def answers(text: str) -> list[tuple[str, int]]:
    reader = KeyReader()
    out = []
    for key, char in keys_of(text):
        step = reader.feed(key, char, choices=9)
        if step.kind == "answer":
            out.append((step.action, step.choice))
    return out


def test_the_word_list_is_a_few_thousand_common_words() -> None:
    assert len(WORDS) > 5000 and {"aardvark", "add", "data", "yes", "no", "annual"} <= set(WORDS)


@pytest.mark.parametrize("form", [str.lower, str.capitalize, str.upper])
def test_no_common_word_writes_config_or_answers_several_calls(form) -> None:  # type: ignore[no-untyped-def]
    wide = CHOOSE | CONFIRMED
    bad = []
    for word in WORDS:
        w = form(word)
        for text in (w, w + " ", w + "\n", w + " 1", w + "\n1", w + w, f"{w} {w}\n"):
            got = [a for a, _ in answers(text) if a in wide]
            if got:
                bad.append((text, got))
    assert not bad, f"{len(bad)} typed texts gave a wide answer, e.g. {bad[:5]}"


def test_a_word_answers_at_most_the_calls_on_screen_one_at_a_time() -> None:
    """`yes` allows the call on screen once (a one-call answer); past the guard (the worst
    case) its `e` would open the next call's editor: still one call, nothing written."""
    assert answers("yes")[0] == ("allow", 0)
    assert answers("aardvark") == [] and answers("add") == [] and answers("data") == []
    for word in WORDS:
        assert all(a in SINGLE for a, _ in answers(word)), word


def test_the_deliberate_sequences_still_answer() -> None:
    assert answers("a2") == [("always_allow", 2)]
    assert answers("s1") == [("session", 1)]
    assert answers("d1") == [("always_deny", 1)]
    assert answers("YY") == [("allow_all", 0)]
    assert answers("N\n") == [("deny_all", 0)]
    assert answers("a\n") == []  # "a" + Enter is a word and a line, never an answer


def test_a_word_starting_with_an_answer_key_goes_to_the_message_box_whole() -> None:
    reader = KeyReader()
    typed = "".join(reader.feed(k, c).text for k, c in keys_of("added"))
    assert typed == "added"
    reader = KeyReader()
    assert reader.feed("escape", None).kind == "leave"
    reader.feed("a", "a")
    assert reader.feed("escape", None).kind == "cancel"  # Esc backs out, types nothing
    assert reader.feed("1", "1").kind == "typed"  # a digit alone is typing
