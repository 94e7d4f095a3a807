"""`kep rules ACTION`: the approval rules as kep applies them.

- `list [--json]`: every rule in force, in the order applied, with its file and line (the
  mode from `--mode` or the config marks rules that don't apply in it).
- `test TOOL '{json}'`: the verdict the rules give that call and the rule that decides it;
  exit 0 allow, 1 ask, 2 deny, 3 bad input or a config that does not load (a rule's failing
  `match` example, say).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable

EXIT = {"allow": 0, "ask": 1, "deny": 2}
BAD_INPUT = 3


def list_rules(args: argparse.Namespace) -> int:
    from tuiapp.commands._common import load_config
    from tuiapp.security.display import json_printable, printable_line
    from tuiapp.security.rule_list import entries, text_lines

    cfg = load_config(args)
    items = entries(cfg.approval, os.environ, cfg.hooks)
    if args.json:
        print(json_printable(json.dumps([e.to_json() for e in items], ensure_ascii=False)))
        return 0
    print(f"# approval mode: {cfg.approval.mode}; deny rules win wherever they stand")
    for line in text_lines(items):
        print(printable_line(line))
    return 0


def main(args: argparse.Namespace) -> int:
    actions: dict[str, Callable[[argparse.Namespace], int]] = {"list": list_rules, "test": test}
    return actions[args.rules_command](args)


def _bad(text: str) -> int:
    from tuiapp.security.display import printable_line

    print(f"kep: {printable_line(text)}", file=sys.stderr)
    return BAD_INPUT


def test(args: argparse.Namespace) -> int:
    from tuiapp.commands._common import load_config
    from tuiapp.security import policy
    from tuiapp.security.display import printable_line
    from tuiapp.vocab.messages import ToolCall

    try:
        arguments = json.loads(args.arguments)
    except RecursionError:
        return _bad("arguments are nested too deeply")
    except json.JSONDecodeError as e:
        return _bad(f"arguments are not valid JSON: {e.msg} at line {e.lineno} col {e.colno}")
    if not isinstance(arguments, dict):
        return _bad('arguments must be a JSON object, e.g. \'{"cmd": "git status"}\'')
    try:
        cfg = load_config(args)
    except SystemExit as e:  # (the config's own one-line message is already printed)
        return BAD_INPUT if e.code == 2 else int(e.code or 0)
    call = ToolCall("test", args.tool, arguments, args.arguments)
    # The tool itself is not discovered (that would run project code): kep's default for its
    # own read-only built-ins does not show here.
    verdict = policy.decide(call, cfg.approval, os.environ, spec=None)
    print(f"{verdict.action}: {printable_line(verdict.rule)}")
    if verdict.message:
        print(f"  message: {printable_line(verdict.message)}")
    return EXIT[verdict.action]
