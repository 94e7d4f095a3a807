"""Issue 24 item 5: rule regexes run in linear time with Python's meaning, and what RE2
can't run is bounded by a deadline whose expiry asks, never allows."""

from __future__ import annotations

import random
import re
import time

import pytest

from tuiapp.security import policy, rule_engine, rule_fallback
from tuiapp.settings.config_types import ApprovalConfig, Rule
from tuiapp.vocab.messages import ToolCall, canonical_json

README_DENY = r"\brm\s+([^\s;&|]+\s+)*(-[a-zA-Z]*[rR]|--recursive)"
README_ALLOW = (r'^(?!.*\.\.)\{"cmd":"(ls|pwd|git (status|log|diff))( (-[a-zA-Z]+|'
                r'[\w.][\w./-]*))*"\}$')
PATTERNS = [README_DENY, README_ALLOW, r"\d+", r"\w+\s\w+", r"^ab$", r"ab$", r"(?i)RM\b",
            r"[^\s;&|]+", r"\bx", r"x\B", r"(?m)^a$", r"(?s)a.b", r"a.b", r"[\w.-]+@\w+",
            r"\Aab\Z", r"(a|b){2,3}?c", r"[^a-c]", r"\S\s\S", r"\W", r"(?a)\w", r"é+",
            r"rm (-r|--rec)", r"^(?=.*x)a"]
ALPHABET = ["a", "b", "c", "x", "r", "m", " ", "\t", "\n", "-", ".", "é", "É", "٣", "\xa0",
            "\u2028", "\x1c", ";", "@", "_", "..", "\v", "ß", "ǅ"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_engine_agrees_with_python_re(pattern: str) -> None:
    rng = random.Random(pattern)
    for _ in range(400):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 10)))
        assert rule_engine.search(pattern, text) == bool(re.search(pattern, text)), repr(text)


def test_the_readme_rules_run_in_re2_not_in_the_helper() -> None:
    for pattern in (README_DENY, README_ALLOW):
        assert rule_engine.compiled(pattern, False) is not None
    # (its \b sits next to `r`: on non-ASCII text RE2 may only match more, fine for a deny)
    assert rule_engine.compiled(README_DENY, True, wider_ok=True) is not None
    assert rule_engine.compiled(README_ALLOW, True) is not None


def test_rm_rm_rm_is_decided_at_once() -> None:
    """The observed failure: 23 KB took 6 s in policy.decide; 117 KB froze the TUI."""
    rules = (Rule("execcmd", "deny", README_DENY, "README rule 1"),
             Rule("execcmd", "allow", README_ALLOW, "README rule 2"))
    for n in (8_000, 40_000):  # 24 KB, 120 KB
        args = {"cmd": "rm " * n}
        start = time.process_time()
        verdict = policy.decide(ToolCall("c", "execcmd", args, canonical_json(args)),
                                ApprovalConfig("ask", rules), {}, spec=None)
        spent = time.process_time() - start
        assert verdict.action == "ask"
        assert spent < 3.0, f"{spent:.1f} s of CPU for {n} words: backtracking"


def test_a_backreference_runs_in_python_with_a_deadline_that_asks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert rule_engine.compiled(r"(a)\1", False) is None
    assert rule_engine.search(r"(\w)\1", "xaay") is True
    assert rule_engine.search(r"(\w)\1", "xay") is False
    monkeypatch.setattr(rule_fallback, "TIMEOUT", 0.3)
    evil = r"(a+)+\1$"
    text = "a" * 40 + "b"
    start = time.monotonic()
    assert rule_engine.search(evil, text) is None  # not decided in time
    assert time.monotonic() - start < 5
    for action in ("allow", "deny"):
        verdict = policy.decide(ToolCall("c", "t", {"x": text}, ""),
                                ApprovalConfig("allow", (Rule("t", action, evil, "r 1"),)),
                                {}, spec=None)
        assert verdict.action == "ask" and "did not finish in time" in verdict.rule
    assert rule_engine.search(r"(\w)\1", "xaay") is True  # a fresh helper took over


def test_invalid_and_odd_patterns_do_not_reach_re2_wrongly() -> None:
    with pytest.raises(re.error):
        rule_engine.compiled("(", False)
    assert rule_engine.search("a{2000}", "a" * 2000) is True  # over RE2's repeat limit
    assert rule_engine.search(r"(?x) a b # comment", "ab") is True
    assert rule_engine.search(r"a$\n", "a\n") is True  # `$` before more pattern: Python's way


def test_tool_names_match_whole_with_global_flags_kept_first() -> None:
    assert rule_engine.fullmatch("(?i)shout", "SHOUT") is True
    assert rule_engine.fullmatch("shout|x", "shoutx") is False
    assert rule_engine.fullmatch("git_.*|fs_.*", "fs_read") is True
