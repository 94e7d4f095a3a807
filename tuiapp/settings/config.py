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
from dataclasses import replace
from pathlib import Path
from typing import Any

from tuiapp.settings import config_models
from tuiapp.settings.config_hooks import parse_hooks
from tuiapp.settings.config_reader import (
    TableReader,
    count_at_least_one,
    deep_merge,
    glob_patterns,
    http_url,
    mcp_log_level,
    positive_number,
    read_regular,
    read_toml,
)
from tuiapp.settings.config_rules import parse_rules
from tuiapp.settings.config_types import (
    APPROVAL_MODES,
    BUILTIN_PROVIDERS,
    ApprovalConfig,
    Config,
    ConfigError,
    McpServerConfig,
    NotifyConfig,
    ProviderConfig,
    Rule,
    SandboxConfig,
    SandboxRule,
    SourceConfig,
    ToolsConfig,
)


def _share(r: TableReader, key: str, default: float) -> float:
    """A share of something, above 0 and at most 1."""
    v = r.get(key, float, default)
    if not 0 < v <= 1:
        raise r.error(key, f"must be above 0 and at most 1 (a share: 0.85 is 85%); got {v}")
    return v


NOTIFY_DESKTOP = ("auto", "osc9", "osc777", "notify-send", "off")


def _non_negative(r: TableReader, key: str, default: float) -> float:
    v = r.get(key, float, default)
    if v < 0:
        raise r.error(key, "must be 0 (never) or more seconds")
    return float(v)


def _mode(ar: TableReader) -> str:
    if ar.table.get("mode") == "yolo":
        raise ar.error("mode", "yolo is chosen for a session only (--mode yolo, or the "
                               "palette), never from a file")
    return str(ar.choice("mode", APPROVAL_MODES[:-1], "ask"))


def parse(data: Mapping[str, Any], file: Path | str, project_root: Path) -> Config:
    r = TableReader(file, data)
    providers = dict(BUILTIN_PROVIDERS)
    for name, table in r.get("providers", dict, {}).items():
        pr = r.child(table if isinstance(table, dict) else {}, f"providers.{name}.")
        if not isinstance(table, dict):
            raise ConfigError(file, f"providers.{name}", "expected a table")
        base = providers.get(name)
        apis = ("responses", "chat", "anthropic")
        if base is not None and base.api == "offline":  # (its context_window may be set)
            apis += ("offline",)
        api = pr.choice("api", apis, base.api if base else None)
        if api is None:
            raise ConfigError(
                file,
                f"providers.{name}.api",
                'required for a new provider: "responses", "chat" or "anthropic"',
            )
        prices, by_model = config_models.per_model(pr)
        own = config_models.options(pr, base.reasoning if base else None)
        providers[name] = ProviderConfig(
            name=name,
            api=api,
            base_url=http_url(pr, "base_url", base.base_url if base else None),
            api_key_env=pr.get("api_key_env", str, base.api_key_env if base else None),
            headers=pr.str_map("headers"),
            default_model=pr.get("default_model", str, base.default_model if base else None),
            reasoning=own.reasoning,
            prices=prices,
            options=own,
            model_options=by_model,
        )

    ar = r.sub("approval")
    rules = parse_rules(ar, file)
    approval = ApprovalConfig(ar.choice("default", ("allow", "ask", "deny"), "ask"), tuple(rules),
                              _mode(ar))

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
            log_level=mcp_log_level(sr),
        )
        if not servers[name].command and not servers[name].url:
            raise ConfigError(file, f"mcp.servers.{name}", "needs command or url")

    ur = r.sub("ui")
    sandbox = _sandbox(r.sub("sandbox"))
    off = ([f"{file}: [sandbox] enabled = false: tools run without the kernel walls"]
           if not sandbox.enabled else [])
    keys = r.get("keys", (object, bool), {})  # any value: a wrong one is a warning, not an error
    if not isinstance(keys, dict):
        off.append(f"{file}: keys: expected a table ([keys] action = \"key\"); ignored")
    return Config(
        sandbox=sandbox,
        model=r.get("model", str),
        theme=r.get("theme", str, "dark"),
        max_steps=int(positive_number(r, "max_steps", 25)),
        compact_at=_share(r, "compact_at", 0.85),
        providers=providers,
        approval=approval,
        tools=tools,
        mcp_servers=servers,
        mcp_prefix=mr.get("prefix", bool, True),
        hooks=parse_hooks(r, file),
        pane_lines=int(positive_number(ur, "pane_lines", 2000)),
        notify=NotifyConfig(_non_negative(ur, "notify_after", 5.0),
                            ur.get("notify_bell", bool, True),
                            ur.choice("notify_desktop", NOTIFY_DESKTOP, "auto")),
        system_prompt=r.get("system_prompt", str),
        keys=keys if isinstance(keys, dict) else {},  # action = "key": checked by ui/keys
        project_root=project_root,
        raw=dict(data),
        warnings=tuple([*r.unknown_keys(), *off]),
    )


NETWORK_WORDS = ("off", "on", "ask")
HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.*-]+)(:[0-9]{1,5})?")


def _paths(r: TableReader, key: str) -> tuple[str, ...]:
    items = r.get(key, list, [])
    if not all(isinstance(p, str) and p and "\0" not in p for p in items):
        raise r.error(key, "expected an array of paths")
    return tuple(items)


def _network(r: TableReader, default: str | tuple[str, ...] | None
             ) -> str | tuple[str, ...] | None:
    value = r.get("network", (str, list))
    if value is None:
        return default
    if isinstance(value, str) and value in NETWORK_WORDS:
        return value
    if isinstance(value, list) and all(isinstance(h, str) and HOST_PORT.fullmatch(h)
                                       for h in value):
        return tuple(h.lower() for h in value)
    raise r.error("network", '"off", "on", "ask" or an array of hosts ("pypi.org:443")')


def _sandbox_rules(r: TableReader, key: str) -> dict[str, SandboxRule]:
    out = {}
    for name in r.get(key, dict, {}):
        rr = r.sub(key).sub(name)
        out[str(name)] = SandboxRule(_network(rr, None), _paths(rr, "writable"),
                                     _paths(rr, "hidden"))
    return out


def _sandbox(r: TableReader) -> SandboxConfig:
    return SandboxConfig(
        enabled=r.get("enabled", bool, True),
        required=r.get("required", bool, False),
        network=_network(r, "ask") or "ask",
        writable=_paths(r, "writable"),
        hidden=_paths(r, "hidden"),
        tools=_sandbox_rules(r, "tools"),
        servers=_sandbox_rules(r, "servers"),
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
    user_approval: Mapping[str, Any] = {}
    user_data: dict[str, Any] = {}
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
            user_approval = _approval_of(data)
            user_data = data
        merged = deep_merge(merged, data)
    # Rules are ordered and first match wins: project rules first, then the user's.
    project_rules = (
        project_data.get("approval", {}).get("rules", [])
        if project_file in files and project_file != user_file
        else []
    )
    mode = _approval_of(project_data).get("mode")
    if project_file in files and mode is not None and mode not in _PROJECT_MODES:
        # A project may make kep stricter, never quieter (README "Modes").
        warnings.append(f"{project_file}: approval.mode = {mode!r} ignored: a project may "
                        f"choose only {' or '.join(_PROJECT_MODES)}")
        user_mode = user_approval.get("mode")
        merged["approval"] = {k: v for k, v in merged["approval"].items() if k != "mode"}
        if user_mode is not None:
            merged["approval"]["mode"] = user_mode
    project_hooks = project_data.get("hooks", []) if project_file in files else []
    user_hooks = user_data.get("hooks", []) if user_file != project_file else []
    if isinstance(project_hooks, list) and isinstance(user_hooks, list) and (
            project_hooks or user_hooks):
        merged["hooks"] = [*project_hooks, *user_hooks]
    if "keys" in project_data and project_file in files and project_file != user_file:
        # A checkout must not move the approval keys under the user's fingers.
        warnings.append(f"{project_file}: [keys] ignored: key bindings come from your user "
                        "config only")
        merged.pop("keys", None)
        if "keys" in user_data:
            merged["keys"] = user_data["keys"]
    if user_rules or project_rules:
        merged.setdefault("approval", {})
        merged["approval"] = dict(merged["approval"], rules=[*project_rules, *user_rules])
    cfg = parse(merged, " + ".join(str(f) for f in files) or "defaults", root)
    sources = [(project_file, len(project_rules)), (user_file, len(user_rules))]
    approval = replace(cfg.approval, rules=_placed(cfg.approval.rules, sources))
    hooks = _hook_files(cfg.hooks, [(project_file, len(project_hooks or [])),
                                    (user_file, len(user_hooks or []))])
    return Config(**{**cfg.__dict__, "approval": approval, "hooks": hooks, "files": tuple(files),
                     "warnings": tuple(warnings)})


def _hook_files(hooks: tuple[Any, ...], sources: list[tuple[Path, int]]) -> tuple[Any, ...]:
    """Each merged hook named by the file it came from."""
    names = [(f, i) for f, count in sources for i in range(1, count + 1)]
    if len(names) != len(hooks):
        return hooks
    return tuple(replace(h, origin=f"{f.name} hook {i}", file=str(f))
                 for h, (f, i) in zip(hooks, names, strict=True))


def _placed(rules: tuple[Rule, ...], sources: list[tuple[Path, int]]) -> tuple[Rule, ...]:
    """The merged rules, each named by the file it came from and its line there (the merged
    parse could only say "a.toml + b.toml rule 7")."""
    from tuiapp.settings.rule_places import places_in

    out: list[Rule] = []
    for file, count in sources:
        if not count:
            continue
        for i, place in enumerate(places_in(file, count), 1):
            rule = rules[len(out)]
            where = f"{file.name} rule {i}" + (f", line {place.line}" if place.line else "")
            out.append(replace(rule, origin=where, file=str(file), line=place.line,
                               note=place.note))
    return tuple(out) if len(out) == len(rules) else rules


_PROJECT_MODES = ("read-only", "ask")  # security/modes.FROM_PROJECT, without importing it here


def _approval_of(data: Mapping[str, Any]) -> Mapping[str, Any]:
    table = data.get("approval", {})
    return table if isinstance(table, Mapping) else {}


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

