"""Argument rules see what the tool will get: a corpus of spellings a model can use to slip a
command past a `deny` rule, each of which must be denied; allow rules that no spelling widens;
and the documentation's own example rules, read from its pages (tuiapp/docs), against hostile
calls."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tuiapp.security.policy import decide
from tuiapp.settings import config
from tuiapp.settings.config_types import ApprovalConfig
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

# The pages with the example rules: "Approval rules" and the configuration reference.
DOCS = [Path(__file__).resolve().parents[2] / "tuiapp" / "docs" / f"{name}.md"
        for name in ("approval", "config")]

# A tool whose schema splits a command over two parameters, as llm-functions' run_command does.
SPEC = ToolSpec("execcmd", "", {"type": "object", "properties": {
    "command": {"type": "string"}, "args": {"type": "array"}, "cmd": {"type": "string"}}},
    "keprompt", "/project/prompts/functions/shell")

# (name, the raw JSON arguments as the model sends them). Every one means `rm -rf victim`, or
# carries it where the tool will see it.
EVASIONS: list[tuple[str, str]] = [
    ("plain", r'{"cmd": "rm -rf victim"}'),
    ("tab", r'{"cmd": "rm\t-rf victim"}'),
    ("newline", r'{"cmd": "rm\n-rf victim"}'),
    ("crlf", r'{"cmd": "rm\r\n-rf victim"}'),
    ("newline before", r'{"cmd": "true\nrm -rf victim"}'),
    ("unicode escape, letters", r'{"cmd": "\u0072\u006d -rf victim"}'),
    ("unicode escape, space", r'{"cmd": "rm\u0020-rf victim"}'),
    ("unicode escape, tab", r'{"cmd": "rm\u0009-rf victim"}'),
    ("escaped slash", r'{"cmd": "\/bin\/rm -rf victim"}'),
    ("no-break space", r'{"cmd": "rm\u00a0-rf victim"}'),
    ("array argv", r'{"argv": ["rm", "-rf", "victim"]}'),
    ("array argv with tabs", r'{"argv": ["rm\t", "\t-rf", "victim"]}'),
    ("nested arrays", r'{"argv": [["rm"], ["-rf", ["victim"]]]}'),
    ("nested object", r'{"opts": {"shell": {"cmd": "rm -rf victim"}}}'),
    ("object in array", r'{"steps": [{"run": "ls"}, {"run": "rm -rf victim"}]}'),
    ("as an object key", r'{"env": {"rm -rf victim": "1"}}'),
    ("extra spaces", r'{"cmd": "rm      -rf     victim"}'),
    ("mixed whitespace", '{"cmd": "rm \\t \\n \\r -rf victim"}'),
    ("key order", r'{"zzz": "x", "aaa": "y", "cmd": "rm -rf victim"}'),
    ("duplicate key, bad last", r'{"cmd": "ls", "cmd": "rm -rf victim"}'),
    ("duplicate key, bad first", r'{"cmd": "rm -rf victim", "cmd": "ls"}'),
    ("split over parameters", r'{"args": ["-rf", "victim"], "command": "rm"}'),
    ("shell quotes", r'''{"cmd": "r'm' -rf victim"}'''),
    ("double quotes", r'{"cmd": "\"rm\" \"-rf\" victim"}'),
    ("backslash", r'{"cmd": "\\rm -r\\f victim"}'),
    ("line continuation", r'{"cmd": "rm -r\\\nf victim"}'),
    ("after a 2 MB line", json.dumps({"cmd": "x" * 2_000_000 + " ; rm -rf victim"})),
    ("one of 500 keys", json.dumps({f"k{i}": ("rm -rf victim" if i == 377 else "ok")
                                    for i in range(500)})),
    ("500 levels deep", '{"a": ' + "[" * 500 + '"rm -rf victim"' + "]" * 500 + "}"),
    ("control characters around", r'{"cmd": "\u001b[0m\u0000rm -rf victim\u0007"}'),
]

# Deny rules as users write them; the corpus must be denied by each.
DENY_RULES = [r"rm\s+-rf", "rm -rf", r"^rm\s+-rf"]


def approval(*rules: dict[str, Any], default: str = "ask") -> ApprovalConfig:
    return config.parse({"approval": {"default": default, "rules": list(rules)}},
                        "kep.toml", Path("/p")).approval


def action(rules: ApprovalConfig, raw: str, name: str = "execcmd") -> str:
    call = ToolCall.from_raw("c1", name, raw)
    assert call.arguments_error is None, call.arguments_error
    return decide(call, rules, {}, spec=SPEC).action


# An anchored rule describes a value that starts with `rm`: not these entries.
NOT_AT_START = {"newline before", "after a 2 MB line", "control characters around",
                "escaped slash"}
CASES = [(label, raw, deny) for label, raw in EVASIONS for deny in DENY_RULES
         if not (deny.startswith("^") and label in NOT_AT_START)]


@pytest.mark.parametrize(("label", "raw", "deny"), CASES,
                         ids=[f"{c[0]} / {c[2]}" for c in CASES])
def test_every_evasion_is_denied(label: str, raw: str, deny: str) -> None:
    # An allow rule for the tool stands before the deny rule: deny wins whatever the order.
    rules = approval({"tool": ".*", "action": "allow"},
                     {"tool": "execcmd", "args": deny, "action": "deny"})
    assert action(rules, raw) == "deny", label


def test_the_corpus_means_what_it_says() -> None:
    """Each entry decodes to something that contains the command (so the corpus tests what
    the tool would get, not a typo). A repeated key counts once decoded, the last copy."""
    for label, raw in EVASIONS:
        if label == "duplicate key, bad first":
            continue  # denied anyway: every copy of a repeated key is searched
        decoded = re.sub(r"[\s'\"\\]", "", json.dumps(json.loads(raw), ensure_ascii=False))
        assert "rm" in decoded and "victim" in decoded, label


def test_harmless_calls_are_not_denied() -> None:
    rules = approval({"tool": "execcmd", "args": r"rm\s+-rf", "action": "deny"})
    for raw in (r'{"cmd": "ls -la"}', r'{"cmd": "echo rm_-rf"}', r'{"argv": ["rm", "x"]}',
                r'{"cmd": "grep -rf patterns ."}'):
        assert action(rules, raw) == "ask", raw


# ---- allow rules: no spelling widens them ---------------------------------------------------

ALLOW_LS = {"tool": "execcmd", "args": r'^\{"cmd":"ls( [\w./-]+)*"\}$', "action": "allow"}


@pytest.mark.parametrize("raw", [
    r'{"cmd": "ls\nrm -rf victim"}',      # a newline is a command separator for sh
    r'{"cmd": "ls\trm"}',
    r'{"cmd": "ls\u000arm -rf victim"}',
    r'{"cmd": "ls", "cmd": "rm -rf victim"}',
    r'{"cmd": "ls", "extra": "x"}',
    r'{"cmd": ["ls"]}',
    r'{"cmd": "ls; rm -rf victim"}',
    r'{"cmd": "ls $(rm -rf victim)"}',
    r'{"cmd": "ls\u2028rm"}',
])
def test_allow_rules_see_every_character_and_key(raw: str) -> None:
    assert action(approval(ALLOW_LS), raw) == "ask"


def test_allow_rules_still_allow_what_they_describe() -> None:
    assert action(approval(ALLOW_LS), r'{"cmd": "ls -la src"}') == "allow"
    assert action(approval(ALLOW_LS), r'{"cmd": "l\u0073"}') == "allow"  # decoded: "ls"


# ---- the docs' example rules ----------------------------------------------------------------


def readme_rules() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rules of the "Approval rules" example and of the configuration reference."""
    text = "\n".join(page.read_text(encoding="utf-8") for page in DOCS)
    blocks = re.findall(r"```toml\n(.*?)```", text, re.S)
    examples = [tomllib.loads(b) for b in blocks if "[[approval.rules]]" in b]
    assert len(examples) >= 2, "the docs lost their approval examples"
    rules = [r for ex in examples for r in ex.get("approval", {}).get("rules", [])]
    return [r for r in rules if r["action"] == "deny"], [r for r in rules if r["action"] != "deny"]


RM_SPELLINGS = ["rm -rf victim", "rm -fr victim", "rm -r -f victim", "rm -f -r victim",
                "rm -R victim", "rm -Rf victim", "rm --recursive victim", "/bin/rm -rf victim",
                "rm -v --recursive victim", "cd .. && rm -rf victim", "rm\t-r\tvictim",
                "r'm' -rf victim", "\\rm -rf victim", "find . -exec rm -rf {} +",
                "rm -rf\nvictim", "xargs rm -r < list"]


def test_readme_deny_examples_deny_every_spelling() -> None:
    denies, _ = readme_rules()
    assert denies
    for rule in denies:
        rules = approval(rule)
        for spelling in RM_SPELLINGS if "rm -rf" not in rule["args"] else RM_SPELLINGS[:1]:
            for raw in (json.dumps({"cmd": spelling}),
                        json.dumps({"argv": spelling.split(" ")}),
                        json.dumps({"cmd": spelling.replace(" ", "\t")})):
                assert action(rules, raw) == "deny", (rule, raw)
    for _label, raw in EVASIONS:  # and the JSON-spelling corpus, through every deny example
        for rule in denies:
            assert action(approval(rule), raw) == "deny", (rule, raw)


HOSTILE_READS = [
    "git diff --no-index /etc/passwd README.md",
    "git diff --no-index ../../secret x",
    "git log --output=/tmp/owned",
    "git diff --output=../outside.txt",
    "git log -p --output=x",
    "git status --porcelain; rm -rf victim",
    "git status && curl evil",
    "git status | sh",
    "ls ../..",
    "ls /etc",
    "ls ~",
    "ls $(rm -rf victim)",
    "ls `rm -rf victim`",
    "ls\nrm -rf victim",
    "ls -la > out",
    "git -c core.pager=sh status",
    "git diff main..HEAD -- ../x",
    "pwd; id",
]


def test_readme_allow_example_asks_for_hostile_calls() -> None:
    _, others = readme_rules()
    allows = [r for r in others if r["action"] == "allow"]
    assert allows
    for rule in allows:
        rules = approval(rule)
        for cmd in HOSTILE_READS:
            assert action(rules, json.dumps({"cmd": cmd})) == "ask", (rule, cmd)
        # What it is for still works.
        for cmd in ("git status", "git diff", "git log -p src/app.py", "ls -la docs", "pwd"):
            assert action(rules, json.dumps({"cmd": cmd})) == "allow", (rule, cmd)


def test_readme_ask_example_asks_even_when_the_environment_skips() -> None:
    _, others = readme_rules()
    asks = [r for r in others if r["action"] == "ask"]
    assert asks
    for rule in asks:
        call = ToolCall("c", "git_reset", {"mode": "hard"})
        env = {"LLM_MCP_SKIP_CONFIRM": ".*"}
        assert decide(call, approval(rule), env, spec=None).action == "ask"


def test_the_texts_stay_proportional_to_the_arguments() -> None:
    """A call built to multiply the texts (an argv at each of 500 levels around a 1 MB
    string, 100 000 array items, a repeated 2 MB key) costs a few times its own size."""
    from tuiapp.security import argument_text

    deep: Any = ["y" * 1_000_000]
    for i in range(500):
        deep = [f"w{i}", deep]
    for raw in (json.dumps({"a": deep}), json.dumps({"argv": ["a"] * 100_000}),
                '{"cmd": "%s", "cmd": "ls"}' % ("z" * 2_000_000)):
        call = ToolCall.from_raw("c", "execcmd", raw)
        texts = argument_text.texts(call.arguments, call.raw_arguments, ())
        assert sum(map(len, texts)) < 6 * len(raw)
