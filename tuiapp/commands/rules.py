"""`kep rules ACTION`: the approval rules as kep applies them.

- `list [--json]`: every rule in force, in the order applied, with its file and line (the
  mode from `--mode` or the config marks rules that don't apply in it).

Each action is one function taking the loaded config; `main` only dispatches.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable

from tuiapp.commands._common import load_config
from tuiapp.settings.config_types import Config


def list_rules(args: argparse.Namespace, cfg: Config) -> int:
    from tuiapp.security.display import json_printable, printable_line
    from tuiapp.security.rule_list import entries, text_lines

    items = entries(cfg.approval, os.environ, cfg.hooks)
    if args.json:
        print(json_printable(json.dumps([e.to_json() for e in items], ensure_ascii=False)))
        return 0
    print(f"# approval mode: {cfg.approval.mode}; deny rules win wherever they stand")
    for line in text_lines(items):
        print(printable_line(line))
    return 0


ACTIONS: dict[str, Callable[[argparse.Namespace, Config], int]] = {"list": list_rules}


def main(args: argparse.Namespace) -> int:
    cfg = load_config(args)
    return ACTIONS[args.rules_command](args, cfg)
