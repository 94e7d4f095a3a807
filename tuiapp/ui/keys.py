"""Every key binding kep defines, by action name, and the `[keys]` table of the user config
that changes them (`approve = "j"`).

Checked once at start: an unknown action, a key that cannot be typed, or a key two actions
of the same place would share is one line each, and the default stays for what it concerns;
kep still starts. Screens and widgets give their Textual bindings these names as ids, so
`set_keymap` moves them; the approval panel's answer keys and the external-editor sequence
read `key()` here. The footer and the help screen show the keys in force. No kep imports:
every screen may ask this module.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from textual.keys import Keys, _character_to_key


@dataclass(frozen=True)
class Action:
    name: str
    default: str
    where: str  # the place where its key works; two actions of one place cannot share a key
    what: str
    kind: str = "binding"  # binding (a Textual binding id) | char (one character) | sequence


def _a(name: str, default: str, where: str, what: str, kind: str = "binding") -> Action:
    return Action(name, default, where, what, kind)


ACTIONS: dict[str, Action] = {a.name: a for a in (
    _a("interrupt", "escape", "app", "interrupt the reply or the tools"),
    _a("retry", "ctrl+r", "app", "retry the last request"),
    _a("new_session", "ctrl+n", "app", "new session"),
    _a("open_session", "ctrl+o", "app", "open a past session"),
    _a("toggle_panes", "ctrl+t", "app", "show / hide the tool panes"),
    _a("toggle_functions", "ctrl+f", "app", "open / close the functions panel"),
    _a("cancel_tools", "ctrl+g", "app", "cancel every running tool"),
    _a("copy_reply", "ctrl+l", "app", "copy the selection or the last reply"),
    _a("toggle_thinking", "ctrl+b", "app", "open / collapse the thinking blocks"),
    _a("switch_mode", "ctrl+s", "app", "next approval mode"),
    _a("show_rules", "alt+r", "app", "the rules screen"),
    _a("help", "f1", "app", "help"),
    _a("rewind", "ctrl+up", "app", "rewind to one of your messages (conversation, files)"),
    _a("external_editor", "ctrl+x ctrl+e", "app", "edit the message in $VISUAL / $EDITOR",
       "sequence"),
    _a("bench_run", "f5", "app", "workbench: run"),
    _a("bench_run_alt", "ctrl+enter", "app", "workbench: run"),
    _a("bench_cancel", "f2", "app", "workbench: cancel the run"),
    _a("bench_edit", "f4", "app", "workbench: edit the tool's source"),
    _a("bench_run_on_save", "f6", "app", "workbench: run again on every save"),
    _a("bench_send", "f7", "app", "workbench: send the last run to the chat"),
    _a("bench_diff", "f8", "app", "workbench: diff the last two runs"),
    _a("bench_rerun", "f9", "app", "workbench: re-run a past run"),
    _a("bench_close", "f3", "app", "workbench: close"),
    _a("approve", "y", "approval", "allow this call once", "char"),
    _a("deny", "n", "approval", "deny this call", "char"),
    _a("session", "s", "approval", "allow for this session (then a digit)", "char"),
    _a("always", "a", "approval", "always allow (then a digit)", "char"),
    _a("never", "d", "approval", "always deny (then a digit)", "char"),
    _a("edit", "e", "approval", "edit the arguments", "char"),
    _a("approve_all", "Y", "approval", "allow every call of the reply (twice)", "char"),
    _a("deny_all", "N", "approval", "deny every call of the reply (twice)", "char"),
    _a("approval_back", "escape", "approval", "back to the message box / the panel"),
    _a("approval_run_edited", "ctrl+s", "approval editor", "submit edited arguments"),
    _a("approval_scroll_down", "pagedown", "approval", "scroll the diff and arguments down"),
    _a("approval_scroll_up", "pageup", "approval", "scroll the diff and arguments up"),
    _a("pane_cancel", "c", "tool pane", "cancel that call"),
    _a("pane_open_output", "o", "tool pane", "open the call's whole output"),
    _a("functions_filter", "slash", "functions panel", "filter by name"),
    _a("functions_check", "c", "functions panel", "run the protocol check"),
    _a("functions_resources", "r", "functions panel", "the MCP servers' resources and templates"),
    _a("resources_close", "escape", "MCP resources", "close"),
    _a("resources_subscribe", "s", "MCP resources", "subscribe to the highlighted resource"),
    _a("template_cancel", "escape", "resource template form", "cancel"),
    _a("template_attach", "ctrl+s", "resource template form", "attach the filled-in resource"),
    _a("elicit_cancel", "escape", "MCP server's question", "cancel"),
    _a("elicit_accept", "ctrl+s", "MCP server's question", "accept (send the form)"),
    _a("elicit_decline", "ctrl+d", "MCP server's question", "decline"),
    _a("elicit_open_url", "o", "MCP server's question", "open a URL question's link"),
    _a("viewer_close", "escape,q", "output viewer", "close"),
    _a("viewer_reload", "r", "output viewer", "reload"),
    _a("sessions_close", "escape", "session picker", "close"),
    _a("sessions_rename", "ctrl+r,f2", "session picker", "rename"),
    _a("sessions_delete", "ctrl+d", "session picker", "delete (twice)"),
    _a("rules_close", "escape", "rules screen", "close"),
    _a("rules_toggle", "space", "rules screen", "disable / enable for this session"),
    _a("rules_delete", "d", "rules screen", "delete from its file (twice)"),
    _a("rules_move_up", "shift+up", "rules screen", "move up within its file"),
    _a("rules_move_down", "shift+down", "rules screen", "move down within its file"),
    _a("help_close", "escape", "help", "close"),
    _a("editor_save", "ctrl+s", "tool editor", "save"),
    _a("editor_close", "escape", "tool editor", "close"),
    _a("form_cancel", "escape", "variables form", "cancel"),
    _a("new_function_cancel", "escape", "new function", "cancel"),
    _a("trust_not_now", "escape", "trust question", "not now"),
    _a("grants_none", "escape", "grants review", "quit, keep none"),
)}

MODIFIERS = ("ctrl", "alt", "shift", "super", "meta", "hyper")
_NAMED = ({k.value for k in Keys if not k.value.startswith("<")} | {"ctrl+enter", "space"}
          | {_character_to_key(chr(c)) for c in range(33, 127)})
_in_force: dict[str, str] = {a.name: a.default for a in ACTIONS.values()}


def key(action: str) -> str:
    """The key (or keys, comma-separated; a sequence space-separated) of `action` now."""
    return _in_force[action]


def changed() -> dict[str, str]:
    """Textual keymap: binding id → keys, for the bindings the user moved."""
    return {n: k for n, k in _in_force.items()
            if k != ACTIONS[n].default and ACTIONS[n].kind == "binding"}


def typeable(one: str) -> bool:
    """Whether a terminal can send `one` (`ctrl+x`, `f5`, `j`, `slash`)."""
    if not one or one != one.strip() or not one.isprintable():
        return False
    *mods, base = one.split("+") if len(one) > 1 else [one]
    if any(m not in MODIFIERS for m in mods) or len(set(mods)) != len(mods):
        return False
    if len(base) == 1:
        return base.isprintable() and not base.isspace()
    return base in _NAMED or f"ctrl+{base}" in _NAMED


def _problem(action: Action, value: object) -> str | None:
    if not isinstance(value, str):
        return f'expected a key such as "{action.default}"'
    if action.kind == "char":
        if len(value) != 1 or not value.isprintable() or value.isspace() or value.isdigit():
            return "expected one character that is not a digit (digits pick a grant)"
        return None
    parts = value.split(" ") if action.kind == "sequence" else value.split(",")
    if action.kind == "sequence" and not 1 <= len(parts) <= 2:
        return 'expected one key or two ("ctrl+x ctrl+e")'
    for part in parts:
        if not typeable(part.strip() if action.kind == "binding" else part):
            return "a key no terminal can send"
    if action.where == "app" and any(len(p.strip()) == 1 for p in parts):
        return "a character alone is typing in the message box: use ctrl+, alt+ or an F key"
    return None


def _keys_of(action: str, keys: str) -> list[str]:
    kind = ACTIONS[action].kind
    return [keys.split(" ")[0]] if kind == "sequence" else [k.strip() for k in keys.split(",")]


def _clashes(force: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(key, action, action) pairs of one place that share a key."""
    seen: dict[tuple[str, str], str] = {}
    out = []
    for name, keys in force.items():
        place = ACTIONS[name].where
        place = "approval" if place == "approval editor" else place
        for k in _keys_of(name, keys):
            other = seen.setdefault((place, k), name)
            if other != name:
                out.append((k, other, name))
    return out


def apply(table: Mapping[str, object]) -> list[str]:
    """Take the user's `[keys]`; one line per problem (that entry is left at its default)."""
    lines: list[str] = []
    force = {a.name: a.default for a in ACTIONS.values()}
    for name, value in table.items():
        action = ACTIONS.get(str(name))
        if action is None:
            close = difflib.get_close_matches(str(name), list(ACTIONS), n=1)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            lines.append(f"[keys] unknown action `{name}` (ignored){hint}")
            continue
        why = _problem(action, value)
        if why:
            lines.append(f"[keys] {name} = {value!r}: {why} (kept {action.default!r})")
            continue
        force[action.name] = str(value)
    while clashes := _clashes(force):
        k, first, second = clashes[0]
        user = [n for n in (second, first) if force[n] != ACTIONS[n].default]
        back = user[0] if user else second
        lines.append(f"[keys] {k!r} is taken twice ({first}, {second}): {back} keeps "
                     f"{ACTIONS[back].default!r}")
        force[back] = ACTIONS[back].default
    _in_force.clear()
    _in_force.update(force)
    return lines


def moved() -> str:
    """The user's changes in force, for the help screen's key page ("" when none)."""
    return " · ".join(f"{n} {shown(k)} (default {shown(ACTIONS[n].default)})"
                      for n, k in _in_force.items() if k != ACTIONS[n].default)


def shown(keys: str) -> str:
    """A key as the footer and help show it: `ctrl+x ctrl+e`, `esc`, `/`."""
    names = {"escape": "esc", "slash": "/", "space": "space"}
    return ", ".join(" ".join(names.get(p, p) for p in k.split(" ")) for k in keys.split(","))
