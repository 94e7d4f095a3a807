"""Approval modes (README "Modes"): how much kep asks, switchable mid-session.

- `ask` (the default): rules decide, the rest is asked about.
- `read-only`: only calls that change nothing run. kep's own read-only built-ins, and rules
  marked `modes = ["read-only"]`, allow; an MCP tool that declares `readOnlyHint` is asked
  about (a server's word, never kep's knowledge); everything else is denied with a message.
- `auto`: with a sandbox in force, what the rules would ask about runs inside it unasked;
  without one (today: always) it is `ask`, and says so.
- `yolo`: nothing is asked (deny rules still deny). Chosen for a session only: never the
  default, never read from a file.

Strictness runs read-only < ask < auto < yolo. A rule may be limited to modes; the grant
written for an answer given in one mode (`grant_modes`) never applies in a stricter one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from tuiapp.settings.config_types import APPROVAL_MODES

Mode = Literal["read-only", "ask", "auto", "yolo"]
MODES: tuple[Mode, ...] = APPROVAL_MODES  # type: ignore[assignment]  # strictest first
DEFAULT: Mode = "ask"
FROM_FILES: tuple[Mode, ...] = ("read-only", "ask", "auto")  # yolo: a session's choice only
# What a project's kep.toml may choose: only as strict as the default, or stricter.
FROM_PROJECT: tuple[Mode, ...] = ("read-only", "ask")

LABELS: dict[str, str] = {
    "read-only": "read-only: only calls that change nothing run",
    "ask": "ask: rules decide, the rest is asked",
    "auto": "auto: runs inside the sandbox unasked (no sandbox yet: asks)",
    "yolo": "yolo: nothing is asked",
}
READ_ONLY_DENIAL = ("read-only mode: only calls that change nothing run here; switch the "
                    "mode to run it")


def strictness(mode: str) -> int:
    return MODES.index(mode) if mode in MODES else MODES.index(DEFAULT)  # type: ignore[arg-type]


def next_mode(mode: str, *, include_yolo: bool = True) -> Mode:
    """The mode after `mode` in the switch's cycle (read-only → ask → auto → yolo → …)."""
    cycle = MODES if include_yolo else MODES[:-1]
    i = cycle.index(mode) if mode in cycle else 0  # type: ignore[arg-type]
    return cycle[(i + 1) % len(cycle)]


def grant_modes(mode: str) -> tuple[str, ...]:
    """The `modes` a rule written for an answer given in `mode` carries: that mode and the
    less strict ones. () means "no limit" and is only right for `ask`, since read-only
    mode already ignores allow rules not marked for it."""
    if mode == DEFAULT:
        return ()
    return tuple(m for m in MODES if strictness(m) >= strictness(mode))


def rule_applies(modes: Iterable[str], action: str, mode: str) -> bool:
    """Whether a rule limited to `modes` (empty: every mode) counts in `mode`. Deny rules
    count in every mode they name; in read-only mode an allow or ask rule counts only when it
    names read-only itself."""
    named = tuple(modes)
    if mode == "read-only" and action != "deny":
        return "read-only" in named
    return not named or mode in named
