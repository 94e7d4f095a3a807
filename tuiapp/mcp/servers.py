"""Which MCP servers a project uses, and what their tools are called in kep.

Servers come from the project's mcp.json (Claude Desktop format, as llm-functions and most
MCP clients use it) and from [mcp.servers.NAME] in kep.toml; a kep.toml entry wins over an
mcp.json entry of the same name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tuiapp.security import trust
from tuiapp.settings.config_types import Config, McpServerConfig

MCP_JSON = "mcp.json"
# "type" as MCP clients write it: stdio, streamable HTTP ("http"; VS Code says "streamable-http")
# and the legacy HTTP+SSE transport.
TRANSPORTS = ("stdio", "http", "streamable-http", "streamableHttp", "sse")
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
    except RecursionError:
        raise McpJsonError(f"{path}: nested too deeply") from None
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
    headers = entry.get("headers", {})
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        raise McpJsonError(f"{where}.headers: expected an object of strings")
    prefix = entry.get("prefix")  # llm-functions' bridge: "prefix": false keeps the bare name
    if not isinstance(prefix, bool | None):
        raise McpJsonError(f"{where}.prefix: expected true or false")
    transport = entry.get("type") or entry.get("transport")
    if transport is not None and transport not in TRANSPORTS:
        raise McpJsonError(f"{where}.type: expected one of {', '.join(TRANSPORTS)}")
    # Claude Desktop and Cline write "disabled": true; kep.toml says enabled = false.
    enabled = entry.get("enabled", not entry.get("disabled", False))
    return McpServerConfig(name=name, command=command, args=tuple(str(a) for a in args),
                           env=dict(env), url=url, enabled=bool(enabled), prefix=prefix,
                           headers=dict(headers), transport=transport)


def configured_servers(config: Config) -> dict[str, McpServerConfig]:
    """mcp.json's servers overlaid with kep.toml's. Raises McpJsonError for a bad mcp.json.

    A Loki functions dir (the project's `functions/`, or a configured loki source) brings its
    own `functions/mcp.json`, as Loki reads it; the project's mcp.json and kep.toml win. An
    untrusted project's servers never start (tuiapp.security.trust)."""
    servers: dict[str, McpServerConfig] = {}
    if trust.state_of(config).trusted:
        for path in reversed(loki_mcp_files(config)):
            servers.update(read_mcp_json(path))
    if trust.project_has_mcp_json(config):
        servers.update({name: s for name, s in read_mcp_json(config.project_root / MCP_JSON).items()
                        if trust.mcp_json_allowed(config, name, s.command, s.args, s.env, s.url)})
    servers.update(config.mcp_servers)
    return servers


def loki_mcp_files(config: Config) -> list[Path]:
    """The `functions/mcp.json` files of the project's Loki functions dirs that exist."""
    from tuiapp.tools.formats.loki import functions_dir

    out = [config.project_root / "functions" / MCP_JSON]
    for src in config.tools.sources:
        if src.format == "loki":
            p = Path(src.path).expanduser()
            out.append(functions_dir(p if p.is_absolute() else config.project_root / p) / MCP_JSON)
    return [p for p in dict.fromkeys(out) if p.is_file()]


def expand_headers(headers: dict[str, str], env: Mapping[str, str]) -> dict[str, str]:
    """`${VAR}` (and `${VAR:-default}`) in header values, from the environment. An unset
    variable becomes empty, as in a shell; the caller names it."""
    def one(m: re.Match[str]) -> str:
        value = env.get(m.group(1))
        return value if value else (m.group(3) or "")

    return {k: _VAR.sub(one, v) for k, v in headers.items()}


def unset_header_vars(headers: dict[str, str], env: Mapping[str, str]) -> list[str]:
    return sorted({m.group(1) for v in headers.values() for m in _VAR.finditer(v)
                   if not env.get(m.group(1)) and m.group(2) is None})


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}")
