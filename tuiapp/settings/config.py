"""Loading settings: the user's config.toml merged with the project's kep.toml (project wins),
parsed into the typed records of tuiapp.settings.config_types.

Files are read by tuiapp.settings.config_reader and written by tuiapp.settings.config_writer.
A bad file or value
raises ConfigError naming the file and the key; callers print it, never a traceback.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tuiapp.settings.config_reader import (
    TableReader,
    count_at_least_one,
    deep_merge,
    glob_patterns,
    http_url,
    positive_number,
    read_regular,
    read_toml,
)
from tuiapp.settings.config_types import (
    BUILTIN_PROVIDERS,
    ApprovalConfig,
    Config,
    ConfigError,
    McpServerConfig,
    ProviderConfig,
    Rule,
    SourceConfig,
    ToolsConfig,
)

REASONING_LEVELS = ("off", "low", "medium", "high")
PRICE_KEYS = ("input", "output", "cached_input")


def _price_table(r: TableReader, key: str) -> dict[str, float] | None:
    """[….prices] input / output (required) and cached_input: per million tokens."""
    if key not in r.table:
        return None
    pr = r.sub(key)
    table = {}
    for k in pr.table:
        if k not in PRICE_KEYS:
            raise pr.error(k, f"unknown price; use {', '.join(PRICE_KEYS)} (per million tokens)")
        v = pr.get(k, float)
        if v < 0:
            raise pr.error(k, "a price cannot be negative")
        table[k] = v
    for k in ("input", "output"):
        if k not in table:
            raise pr.error(k, "required (price per million tokens)")
    return table


def _prices(pr: TableReader) -> dict[str, dict[str, float]]:
    """[providers.X.prices] for every model, [providers.X.models."M"] prices = {…} for one."""
    out: dict[str, dict[str, float]] = {}
    if (table := _price_table(pr, "prices")) is not None:
        out[""] = table
    models = pr.sub("models")
    for model in models.table:
        if (table := _price_table(models.sub(model), "prices")) is not None:
            out[model] = table
    return out


def parse(data: Mapping[str, Any], file: Path | str, project_root: Path) -> Config:
    r = TableReader(file, data)
    providers = dict(BUILTIN_PROVIDERS)
    for name, table in r.get("providers", dict, {}).items():
        pr = r.child(table if isinstance(table, dict) else {}, f"providers.{name}.")
        if not isinstance(table, dict):
            raise ConfigError(file, f"providers.{name}", "expected a table")
        base = providers.get(name)
        api = pr.choice("api", ("responses", "chat", "anthropic"), base.api if base else None)
        if api is None:
            raise ConfigError(
                file,
                f"providers.{name}.api",
                'required for a new provider: "responses", "chat" or "anthropic"',
            )
        providers[name] = ProviderConfig(
            name=name,
            api=api,
            base_url=http_url(pr, "base_url", base.base_url if base else None),
            api_key_env=pr.get("api_key_env", str, base.api_key_env if base else None),
            headers=pr.str_map("headers"),
            default_model=pr.get("default_model", str, base.default_model if base else None),
            reasoning=pr.choice("reasoning", REASONING_LEVELS, base.reasoning if base else None),
            prices=_prices(pr),
        )

    ar = r.sub("approval")
    rules = []
    for i, raw in enumerate(ar.get("rules", list, []), 1):
        if not isinstance(raw, dict):
            raise ConfigError(file, f"approval.rules[{i}]", "expected a table")
        rr = ar.child(raw, f"approval.rules[{i}].")
        tool = rr.regex("tool")
        if tool is None:
            raise ConfigError(file, f"approval.rules[{i}].tool", "required (a regex)")
        action = rr.choice("action", ("allow", "ask", "deny"), None)
        if action is None:
            raise ConfigError(file, f"approval.rules[{i}].action", "required: allow, ask or deny")
        rules.append(Rule(tool, action, rr.regex("args"), f"{Path(file).name} rule {i}"))
    approval = ApprovalConfig(ar.choice("default", ("allow", "ask", "deny"), "ask"), tuple(rules))

    tr = r.sub("tools")
    timeouts = {}
    for k, v in tr.get("timeouts", dict, {}).items():
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v < math.inf:
            raise ConfigError(file, f"tools.timeouts.{k}", "expected a positive number of seconds")
        timeouts[k] = float(v)
    sources = []
    for i, raw in enumerate(tr.get("sources", list, []), 1):
        sr = tr.child(raw if isinstance(raw, dict) else {}, f"tools.sources[{i}].")
        fmt = sr.choice(
            "format", ("keprompt", "llm-functions", "loki", "extension", "aitool"), None
        )
        path = sr.get("path", str)
        if fmt is None or path is None:
            raise ConfigError(file, f"tools.sources[{i}]", "needs format and path")
        setup = sr.get("setup", str)
        if setup is not None and not re.fullmatch(r"[\w.]+:[\w.]+", setup):
            raise ConfigError(file, f"tools.sources[{i}].setup",
                              'expected "module:function", e.g. "myapp.paths:init"')
        init = sr.get("init", dict, {})
        if not all(isinstance(v, dict) for v in init.values()):
            raise ConfigError(file, f"tools.sources[{i}].init",
                              "expected a table per class name: init.ClassName = {arg = …}")
        sources.append(SourceConfig(fmt, path, setup, dict(sr.get("setup_args", dict, {})),
                                    {str(k): dict(v) for k, v in init.items()}))
    dirs = tr.get("dirs", list, [])
    if not all(isinstance(d, str) for d in dirs):
        raise ConfigError(file, "tools.dirs", "expected an array of strings")
    pass_env = tr.get("pass_env", list, [])
    if not all(isinstance(d, str) for d in pass_env):
        raise ConfigError(file, "tools.pass_env", "expected an array of variable names")
    tools = ToolsConfig(
        timeout=positive_number(tr, "timeout", 30.0),
        list_timeout=positive_number(tr, "list_timeout", 10.0),
        timeouts=timeouts,
        output_cap=int(positive_number(tr, "output_cap", 64 * 1024)),
        builtins=tr.get("builtins", bool, True),
        dirs=tuple(dirs),
        sources=tuple(sources),
        allow_outside_root=tr.get("allow_outside_root", bool, False),
        list_concurrency=int(positive_number(tr, "list_concurrency", 8)),
        llm_functions_compat=tr.get("llm_functions_compat", bool, False),
        python=tr.get("python", str),
        ts_runtime=tr.get("ts_runtime", str),
        max_parallel=count_at_least_one(tr, "max_parallel", 8),
        max_calls_per_reply=count_at_least_one(tr, "max_calls_per_reply", 64),
        max_offered=count_at_least_one(tr, "max_offered", 256),
        include=glob_patterns(tr, "include"),
        exclude=glob_patterns(tr, "exclude"),
        description_cap=count_at_least_one(tr, "description_cap", 8192),
        spool_max_mb=positive_number(tr, "spool_max_mb", 100.0),
        spool_session_mb=positive_number(tr, "spool_session_mb", 1000.0),
        pass_env=tuple(pass_env),
    )

    mr = r.sub("mcp")
    servers = {}
    for name, table in mr.get("servers", dict, {}).items():
        if not isinstance(table, dict):
            raise ConfigError(file, f"mcp.servers.{name}", "expected a table")
        sr = mr.child(table, f"mcp.servers.{name}.")
        args = sr.get("args", list, [])
        servers[name] = McpServerConfig(
            name=name,
            command=sr.get("command", str),
            args=tuple(str(a) for a in args),
            env=sr.str_map("env"),
            url=sr.get("url", str),
            enabled=sr.get("enabled", bool, True),
            startup_timeout=positive_number(sr, "startup_timeout", 30.0),
            prefix=sr.get("prefix", bool),
            headers=sr.str_map("headers"),
            transport=sr.get("type", str),
        )
        if not servers[name].command and not servers[name].url:
            raise ConfigError(file, f"mcp.servers.{name}", "needs command or url")

    ur = r.sub("ui")
    return Config(
        model=r.get("model", str),
        theme=r.get("theme", str, "dark"),
        max_steps=int(positive_number(r, "max_steps", 25)),
        providers=providers,
        approval=approval,
        tools=tools,
        mcp_servers=servers,
        mcp_prefix=mr.get("prefix", bool, True),
        pane_lines=int(positive_number(ur, "pane_lines", 2000)),
        system_prompt=r.get("system_prompt", str),
        project_root=project_root,
        raw=dict(data),
        warnings=tuple(r.unknown_keys()),
    )


def load(root: Path, user_file: Path,
         project_filter: Callable[[dict[str, Any]], dict[str, Any]] | None) -> Config:
    """Load user + project config. Raises ConfigError naming the file and key.

    `project_filter` decides what of the project's kep.toml counts (None: none of it); which
    entries apply is decided by the opened project (tuiapp.project.config), not here."""
    project_file = root / "kep.toml"
    merged: dict[str, Any] = {}
    files = []
    warnings: list[str] = []
    user_rules: list[Any] = []
    project_data: dict[str, Any] = {}
    for f in (user_file, project_file):
        if f == project_file and f != user_file:
            if project_filter is None:
                continue
            data = project_data = project_filter(read_toml(f))
        else:
            data = read_toml(f)
        if not data and not f.exists():
            continue
        # Validate each file alone, so errors and warnings name the right file.
        warnings += parse(data, f, root).warnings
        files.append(f)
        if f == user_file:
            user_rules = data.get("approval", {}).get("rules", [])
        merged = deep_merge(merged, data)
    # Rules are ordered and first match wins: project rules first, then the user's.
    project_rules = (
        project_data.get("approval", {}).get("rules", [])
        if project_file in files and project_file != user_file
        else []
    )
    if user_rules or project_rules:
        merged.setdefault("approval", {})
        merged["approval"] = dict(merged["approval"], rules=[*project_rules, *user_rules])
    cfg = parse(merged, " + ".join(str(f) for f in files) or "defaults", root)
    return Config(**{**cfg.__dict__, "files": tuple(files), "warnings": tuple(warnings)})


DOTENV_MAX_BYTES = 1024 * 1024
DOTENV_MAX_LINES = 5000


def read_dotenv(root: Path) -> dict[str, str | None]:
    """The variables of <root>/.env ({} when there is none). Raises ConfigError when the file
    is unreadable or not UTF-8."""
    env_file = root / ".env"
    if not env_file.is_file():
        return {}
    import io

    from dotenv import dotenv_values

    raw = read_regular(env_file, DOTENV_MAX_BYTES) or b""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise ConfigError(env_file, "", f"not valid UTF-8 at line {line}") from None
    if "\0" in text:
        line = text[: text.index("\0")].count("\n") + 1
        raise ConfigError(env_file, "", f"a NUL byte at line {line}")
    if (lines := text.count("\n")) > DOTENV_MAX_LINES:  # the parser is quadratic in lines
        raise ConfigError(env_file, "", f"too many lines ({lines:,}; at most "
                                        f"{DOTENV_MAX_LINES:,})")
    return dict(dotenv_values(stream=io.StringIO(text)))  # the bytes checked, not a second read
