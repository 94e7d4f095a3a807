"""What a project brings that acts without asking, and what it contains, read without running
anything: for folder trust (tuiapp.security.trust) and its question screen.

Items are the entries of kep.toml and mcp.json that take effect on their own: allow rules, an
`allow` approval default, MCP servers (started at once) and provider tables (where keys are
sent). Each has a stable key (a hash of its content) and a label for messages. A trusted
project records its items' keys; an item whose key is not recorded was gained since.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MCP_JSON = "mcp.json"
KEP_TOML = "kep.toml"
_LABEL_MAX = 120


def item_key(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, ensure_ascii=True, default=str)
    import hashlib  # only for projects that allow something (OpenSSL costs ~3 ms)

    return hashlib.sha256(text.encode()).hexdigest()[:32]


def one_line(text: str) -> str:
    """A label from file text: one line, printable, bounded (it is shown on screen)."""
    flat = "".join(c if c.isprintable() else " " for c in str(text))
    flat = " ".join(flat.split())
    return flat if len(flat) <= _LABEL_MAX else flat[: _LABEL_MAX - 1] + "…"


def read_project_files(root: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The project's kep.toml and mcp.json as data ({} when absent or unreadable: a broken
    file declares nothing here, and config loading reports it)."""
    toml: dict[str, Any] = {}
    with_json: dict[str, Any] = {}
    try:
        with (root / KEP_TOML).open("rb") as f:
            toml = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        pass
    try:
        data = json.loads((root / MCP_JSON).read_text(encoding="utf-8"))
        if isinstance(data, dict):
            with_json = data
    except (OSError, ValueError, UnicodeDecodeError):
        pass
    return toml, with_json


def rule_item(tool: Any, action: Any, args: Any = None) -> tuple[str | None, str]:
    if action != "allow":
        return None, ""  # deny and ask rules only ever ask more: always in force
    label = f"allow rule tool ~ /{one_line(tool)}/"
    if args:
        label += f" args ~ /{one_line(args)}/"
    return item_key({"kind": "allow rule", "tool": tool, "args": args}), label


def mcp_json_item(name: str, command: Any, args: list[Any], env: Any, url: Any
                  ) -> tuple[str, str]:
    entry = {"command": command, "args": [str(a) for a in args], "env": env, "url": url}
    return (item_key({"kind": "mcp.json server", "name": name, **entry}),
            f"MCP server {one_line(name)} (mcp.json: {one_line(command or url or '')})")


def _server_item(name: str, table: Any) -> tuple[str, str]:
    what = (table.get("command") or table.get("url") or "") if isinstance(table, dict) else ""
    return (item_key({"kind": "server", "name": name, "table": table}),
            f"MCP server {one_line(name)} (kep.toml: {one_line(what)})")


def _provider_item(name: str, table: Any) -> tuple[str, str]:
    where = table.get("base_url") if isinstance(table, dict) else None
    return (item_key({"kind": "provider", "name": name, "table": table}),
            f"provider {one_line(name)}" + (f" at {one_line(where)}" if where else ""))


SETTING_TABLES = ("tools", "sandbox")  # every key of these changes what runs or is reachable


def setting_item(table: str, name: str, value: Any) -> tuple[str, str]:
    shown = json.dumps(value, ensure_ascii=False, default=str)
    return (item_key({"kind": "setting", "table": table, "name": name, "value": value}),
            f"[{one_line(table)}] {one_line(name)} = {one_line(shown)}")


def table_at(data: Any, *keys: str) -> dict[str, Any]:
    for k in keys:
        data = data.get(k) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def items_of(toml: dict[str, Any], mcp: dict[str, Any]) -> dict[str, str]:
    """key → label of every item the two files declare, in file order."""
    out: dict[str, str] = {}
    approval = table_at(toml, "approval")
    if approval.get("default") == "allow":
        out[item_key({"kind": "default", "value": "allow"})] = "approval default = allow"
    rules = approval.get("rules")
    for raw in rules if isinstance(rules, list) else []:
        if isinstance(raw, dict):
            key, label = rule_item(raw.get("tool"), raw.get("action"), raw.get("args"))
            if key is not None:
                out[key] = label
    for table in SETTING_TABLES:
        for name, value in table_at(toml, table).items():
            key, label = setting_item(table, name, value)
            out[key] = label
    for name, table in table_at(toml, "mcp", "servers").items():
        key, label = _server_item(name, table)
        out[key] = label
    for name, table in table_at(toml, "providers").items():
        key, label = _provider_item(name, table)
        out[key] = label
    for name, entry in table_at(mcp, "mcpServers").items():
        if isinstance(entry, dict):
            args = entry.get("args", [])
            key, label = mcp_json_item(name, entry.get("command"),
                                       args if isinstance(args, list) else [],
                                       entry.get("env", {}), entry.get("url"))
            out[key] = label
    return out


def withhold(data: dict[str, Any], accepted: frozenset[str] | None) -> dict[str, Any]:
    """kep.toml data minus the items not in `accepted` (None: nothing held back)."""
    if accepted is None:
        return data
    out = dict(data)
    approval = dict(table_at(data, "approval"))
    if approval.get("default") == "allow" and item_key({"kind": "default", "value": "allow"}) \
            not in accepted:
        approval.pop("default")
    rules = approval.get("rules")
    if isinstance(rules, list):
        approval["rules"] = [
            r for r in rules
            if not isinstance(r, dict)
            or (key := rule_item(r.get("tool"), r.get("action"), r.get("args"))[0]) is None
            or key in accepted
        ]
    if "approval" in data:
        out["approval"] = approval
    for table in SETTING_TABLES:
        if table in data:
            out[table] = {n: v for n, v in table_at(data, table).items()
                          if setting_item(table, n, v)[0] in accepted}
    servers = table_at(data, "mcp", "servers")
    if servers:
        kept = {n: t for n, t in servers.items() if _server_item(n, t)[0] in accepted}
        out["mcp"] = {**table_at(data, "mcp"), "servers": kept}
    providers = table_at(data, "providers")
    if providers:
        out["providers"] = {n: t for n, t in providers.items()
                            if _provider_item(n, t)[0] in accepted}
    return out


# ---- what the trust question shows ---------------------------------------------------------


@dataclass(frozen=True)
class Inventory:
    """What trusting a project would switch on, counted without running anything."""

    executables: int = 0
    packs: int = 0
    servers: tuple[str, ...] = ()
    allow_rules: tuple[str, ...] = ()  # allow rules and an `allow` default, as labels
    providers: tuple[str, ...] = ()  # provider tables (where API keys are sent), as labels
    env_file: bool = False
    settings_file: bool = False
    # Settings, .env variables kep reads and git commands, as labels.
    others: tuple[str, ...] = ()
    # Interpreters and programs the checkout provides (.venv, node_modules/.bin). An untrusted
    # project's are never used, so alone they ask nothing; they are listed when a question is
    # asked, recorded when trusted, and one gained since is held back and asked about.
    runtimes: tuple[str, ...] = ()

    def empty(self) -> bool:
        return not (self.executables or self.packs or self.servers or self.allow_rules
                    or self.providers or self.env_file or self.settings_file or self.others)

    def summary(self) -> str:
        def n(count: int, word: str) -> str:
            return f"{count} {word}{'' if count == 1 else 's'}"

        parts = [n(self.executables, "executable"), n(self.packs, "Python pack"),
                 n(len(self.servers), "MCP server"), n(len(self.allow_rules), "allow rule")]
        if self.providers:
            parts.append(n(len(self.providers), "provider table"))
        if self.others:
            parts.append(n(len(self.others), "other item"))
        if self.env_file:
            parts.append(".env")
        if self.settings_file:
            parts.append("kep.toml")
        return ", ".join(parts)


@dataclass(frozen=True)
class Question:
    """What the TUI asks about: a project that holds something untrusted, or that gained
    self-acting entries since it was trusted."""

    root: str
    contents: Inventory
    gained: tuple[str, ...] = ()
