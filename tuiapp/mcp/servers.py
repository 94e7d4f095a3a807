"""Which MCP servers a project uses, and what their tools are called in kep.

Servers come from the project's mcp.json (Claude Desktop format, as llm-functions and most
MCP clients use it) and from [mcp.servers.NAME] in kep.toml; a kep.toml entry wins over an
mcp.json entry of the same name.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tuiapp import trust
from tuiapp.config import Config, McpServerConfig

MCP_JSON = "mcp.json"
_NOT_NAME_CHAR = re.compile(r"[^a-z0-9_]")


class McpJsonError(Exception):
    """mcp.json cannot be used. The message is one line and says what to fix."""


def tool_name(server: str, tool: str, prefix: bool = True) -> str:
    """`<server>_<tool>`, lower-case, `-` → `_` (as llm-functions names bridged tools).

    Any other character a provider would reject in a function name also becomes `_`.
    """
    raw = f"{server}_{tool}" if prefix else tool
    return _NOT_NAME_CHAR.sub("_", raw.lower())


def read_mcp_json(path: Path) -> dict[str, McpServerConfig]:
    """The servers an mcp.json declares ({} when there is no file). Raises McpJsonError."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise McpJsonError(f"{path}: cannot read: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise McpJsonError(f"{path}: not valid JSON: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
        raise McpJsonError(f'{path}: expected {{"mcpServers": {{NAME: {{"command": …}}}}}}')
    servers = {}
    for name, entry in data.get("mcpServers", {}).items():
        servers[name] = _server_from_json(path, name, entry)
    return servers


def _server_from_json(path: Path, name: str, entry: Any) -> McpServerConfig:
    where = f"{path}: mcpServers.{name}"
    if not isinstance(entry, dict):
        raise McpJsonError(f"{where}: expected an object")
    command, url = entry.get("command"), entry.get("url")
    if not isinstance(command, str | None) or not isinstance(url, str | None):
        raise McpJsonError(f"{where}: command and url must be strings")
    if not command and not url:
        raise McpJsonError(f"{where}: needs command (or url)")
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str | int | float) for a in args):
        raise McpJsonError(f"{where}.args: expected an array of strings")
    env = entry.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise McpJsonError(f"{where}.env: expected an object of strings")
    # Claude Desktop and Cline write "disabled": true; kep.toml says enabled = false.
    enabled = entry.get("enabled", not entry.get("disabled", False))
    return McpServerConfig(name=name, command=command, args=tuple(str(a) for a in args),
                           env=dict(env), url=url, enabled=bool(enabled))


def configured_servers(config: Config) -> dict[str, McpServerConfig]:
    """mcp.json's servers overlaid with kep.toml's. Raises McpJsonError for a bad mcp.json."""
    servers = {}
    if trust.project_has_mcp_json(config):  # an untrusted project's servers never start
        servers = {name: s for name, s in read_mcp_json(config.project_root / MCP_JSON).items()
                   if trust.mcp_json_allowed(config, name, s.command, s.args, s.env, s.url)}
    servers.update(config.mcp_servers)
    return servers
