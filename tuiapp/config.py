"""Typed settings: the user's config.toml merged with the project's kep.toml (project wins).

Read with tomllib, written with tomli_w atomically. A bad file or value raises ConfigError
naming the file and the key; callers print it, never a traceback.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tuiapp import paths, trust
from tuiapp.records import FrozenRecord

Api = Literal["responses", "chat", "anthropic", "offline"]
Action = Literal["allow", "ask", "deny"]
# The settings classes below are @dataclass(frozen=True, eq=False, repr=False) on FrozenRecord:
# same equality, hash and repr as plain frozen dataclasses, cheaper to import (startup path).


class ConfigError(Exception):
    def __init__(self, file: Path | str, key: str, message: str) -> None:
        self.file, self.key, self.message = str(file), key, message
        super().__init__(f"{file}: {key}: {message}" if key else f"{file}: {message}")


@dataclass(frozen=True, eq=False, repr=False)
class ProviderConfig(FrozenRecord):
    name: str
    api: Api
    base_url: str | None = None
    api_key_env: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    default_model: str | None = None
    reasoning: str | None = None  # "low" | "medium" | "high" | "off"; None: the API's default
    # per-million-token prices: {"input": …, "output": …, "cached_input": …}; "" = any model
    prices: dict[str, dict[str, float]] = field(default_factory=dict)

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def prices_for(self, model: str) -> dict[str, float] | None:
        return self.prices.get(model) or self.prices.get("")


BUILTIN_PROVIDERS: dict[str, ProviderConfig] = {
    p.name: p
    for p in (
        ProviderConfig("offline", "offline"),
        ProviderConfig("openai", "responses", None, "OPENAI_API_KEY", default_model="gpt-5-mini"),
        ProviderConfig(
            "anthropic", "anthropic", None, "ANTHROPIC_API_KEY", default_model="claude-sonnet-4-5"
        ),
        ProviderConfig("openrouter", "chat", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
        ProviderConfig("ollama", "chat", "http://localhost:11434/v1"),
        ProviderConfig("lmstudio", "chat", "http://localhost:1234/v1"),
        ProviderConfig("vllm", "chat", "http://localhost:8000/v1"),
        ProviderConfig("llamacpp", "chat", "http://localhost:8080/v1"),
    )
}


@dataclass(frozen=True, eq=False, repr=False)
class Rule(FrozenRecord):
    tool: str  # regex, full match against the tool name
    action: Action
    args: str | None = None  # regex over the decoded arguments (core/argument_text.py)
    origin: str = ""  # "file.toml rule 3", for messages

    def describe(self) -> str:
        a = f", arguments match {self.args}" if self.args else ""
        return f"{self.origin} (tool matches {self.tool}{a})"


@dataclass(frozen=True, eq=False, repr=False)
class ApprovalConfig(FrozenRecord):
    default: Action = "ask"
    rules: tuple[Rule, ...] = ()


@dataclass(frozen=True, eq=False, repr=False)
class SourceConfig(FrozenRecord):
    format: str
    path: str
    # aitool hosts: "module:function" run in the tool's process before its classes are built
    # (with setup_args as keyword arguments), and constructor arguments per class name.
    setup: str | None = None
    setup_args: dict[str, Any] = field(default_factory=dict)
    init: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True, eq=False, repr=False)
class ToolsConfig(FrozenRecord):
    timeout: float = 30.0
    list_timeout: float = 10.0
    timeouts: dict[str, float] = field(default_factory=dict)
    output_cap: int = 64 * 1024
    builtins: bool = True
    dirs: tuple[str, ...] = ()  # extra keprompt function directories
    sources: tuple[SourceConfig, ...] = ()  # [[tools.sources]] format + path
    allow_outside_root: bool = False  # built-in file functions may leave the project root
    list_concurrency: int = 8
    # llm-functions quirks on request: JS enum values lower-cased, Python defaults ignored
    # (a parameter is optional only when Optional[...]).
    llm_functions_compat: bool = False
    python: str | None = None  # interpreter for Python tools without a shebang
    ts_runtime: str | None = None  # TypeScript runtime (default: tsx on PATH, else `npx tsx`)
    # Bounds against a model (or a project) that asks for too much at once.
    max_parallel: int = 8  # calls running at once; the rest wait in order ("queued")
    max_calls_per_reply: int = 64  # calls of one reply beyond this are refused
    max_offered: int = 256  # more tools than this offered to the model: warn once
    include: tuple[str, ...] = ()  # glob patterns: only matching tools are offered
    exclude: tuple[str, ...] = ()  # glob patterns: matching tools are not offered
    description_cap: int = 8192  # characters of one tool description offered to the model
    spool_max_mb: float = 100.0  # one call's spool file; beyond it head and tail are kept
    spool_session_mb: float = 1000.0  # all spool files of one kep session
    # Secret variables (provider keys, `.env` keys) tools and MCP servers get anyway.
    pass_env: tuple[str, ...] = ()

    def timeout_for(self, name: str) -> float:
        return self.timeouts.get(name, self.timeout)


@dataclass(frozen=True, eq=False, repr=False)
class McpServerConfig(FrozenRecord):
    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    enabled: bool = True
    # How long connecting + the first tools/list may take (npx-launched servers download first).
    startup_timeout: float = 30.0
    # None: [mcp] prefix decides; mcp.json's per-server "prefix" (llm-functions' bridge) wins.
    prefix: bool | None = None
    headers: dict[str, str] = field(default_factory=dict)  # url servers; ${VAR} expanded
    transport: str | None = None  # url servers: "http" (streamable, default) or "sse"


@dataclass(frozen=True, eq=False, repr=False)
class Config(FrozenRecord):
    model: str | None = None
    theme: str = "dark"
    max_steps: int = 25
    providers: dict[str, ProviderConfig] = field(default_factory=lambda: dict(BUILTIN_PROVIDERS))
    approval: ApprovalConfig = field(default_factory=ApprovalConfig)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    mcp_servers: dict[str, McpServerConfig] = field(default_factory=dict)
    mcp_prefix: bool = True
    pane_lines: int = 2000
    system_prompt: str | None = None
    project_root: Path = field(default_factory=Path.cwd)
    files: tuple[Path, ...] = ()  # the files that were read, lowest precedence first
    warnings: tuple[str, ...] = ()  # unknown keys, one line each (the rest still applies)
    raw: dict[str, Any] = field(default_factory=dict, compare=False)
    # The folder-trust decision this config was loaded under (None: built by hand, decided
    # from project_root when asked; see tuiapp.trust.state_of).
    trust: trust.TrustState | None = None

    @property
    def project_file(self) -> Path:
        return self.project_root / "kep.toml"

    def default_model(self) -> str:
        """The configured model, else the first provider with a key, else offline."""
        if self.model:
            return self.model
        for name in ("openai", "anthropic", "openrouter"):
            p = self.providers.get(name)
            if p and p.api_key() and p.default_model:
                return f"{name}/{p.default_model}"
        return "offline"


# ---- reading -----------------------------------------------------------------------------


MAX_DEPTH = 64  # tables/arrays nested deeper than this are refused (no config needs it)


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file's data ({} when it does not exist). Anything wrong with it, from bad bytes
    to nesting deep enough to exhaust the parser's stack, is one ConfigError."""
    try:
        with path.open("rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise ConfigError(path, "", f"cannot read: {e.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise ConfigError(
            path, "", f"not valid UTF-8 at line {line}, column {col} (byte {e.start})"
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(path, "", f"not valid TOML: {e}") from None
    except RecursionError:
        raise ConfigError(path, "", f"nested too deeply (at most {MAX_DEPTH} levels)") from None
    where = _too_deep(data)
    if where is not None:
        raise ConfigError(path, where, f"nested too deeply (at most {MAX_DEPTH} levels)")
    return data


_read_toml = read_toml  # the name the rest of this module (and other lanes) use


def _too_deep(data: Any) -> str | None:
    """The dotted key where `data` nests deeper than MAX_DEPTH, or None (iterative)."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        node, key, depth = stack.pop()
        if depth > MAX_DEPTH:
            return key.split(".", 1)[0] or "(top)"
        if isinstance(node, dict):
            stack.extend((v, f"{key}.{k}" if key else str(k), depth + 1) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, key, depth + 1) for v in node)
    return None


def _deep_merge(low: Mapping[str, Any], high: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(low)
    for k, v in high.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


class _Reader:
    """Pulls typed values out of one table, naming file and dotted key on error.

    Readers made from one root share `readers`, so after a parse every key that no reader
    asked for is known: that is a misspelling or a setting kep does not have.
    """

    def __init__(
        self,
        file: Path | str,
        table: Mapping[str, Any],
        prefix: str = "",
        readers: list[_Reader] | None = None,
    ) -> None:
        self.file, self.table, self.prefix = file, table, prefix
        self.asked: set[str] = set()
        self.readers = readers if readers is not None else []
        self.readers.append(self)

    def child(self, table: Mapping[str, Any], prefix: str) -> _Reader:
        return _Reader(self.file, table, prefix, self.readers)

    def unknown_keys(self) -> list[str]:
        """Warnings for keys nobody read, each with the closest key that was read."""
        import difflib

        out = []
        for r in self.readers:
            known = sorted(r.asked)
            for key in r.table:
                if key in r.asked:
                    continue
                close = difflib.get_close_matches(str(key), known, n=1)
                hint = f"; did you mean `{close[0]}`?" if close else ""
                out.append(f"{self.file}: unknown key `{r.prefix}{key}` (ignored){hint}")
        return out

    def _err(self, key: str, msg: str) -> ConfigError:
        return ConfigError(self.file, f"{self.prefix}{key}", msg)

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
        self.asked.add(key)
        if key not in self.table:
            return default
        v = self.table[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        # TOML ints are acceptable where floats are expected; bools are not numbers here.
        if float in kinds and isinstance(v, int) and not isinstance(v, bool):
            return float(v)
        if isinstance(v, float) and not math.isfinite(v):
            raise self._err(key, f"expected a finite number, got {v}")
        if isinstance(v, bool) and bool not in kinds:
            raise self._err(key, f"expected {_kind_name(kinds)}, got a boolean")
        if not isinstance(v, kinds):
            raise self._err(key, f"expected {_kind_name(kinds)}, got {type(v).__name__}")
        return v

    def choice(self, key: str, options: tuple[str, ...], default: str | None) -> Any:
        v = self.get(key, str, default)
        if v is not None and v not in options:
            raise self._err(key, f"must be one of {', '.join(options)}; got {v!r}")
        return v

    def regex(self, key: str, default: str | None = None) -> str | None:
        v = self.get(key, str, default)
        if v is not None:
            try:
                re.compile(v)
            except re.error as e:
                raise self._err(key, f"invalid regex {v!r}: {e}") from None
        return v

    def sub(self, key: str) -> _Reader:
        return self.child(self.get(key, dict, {}), f"{self.prefix}{key}.")

    def str_map(self, key: str) -> dict[str, str]:
        table = self.get(key, dict, {})
        for k, v in table.items():
            if not isinstance(v, str):
                raise self._err(f"{key}.{k}", "expected a string")
        return dict(table)


def _kind_name(kinds: tuple[type, ...]) -> str:
    names = {
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "true/false",
        dict: "a table",
        list: "an array",
    }
    return " or ".join(names.get(k, k.__name__) for k in kinds)


REASONING_LEVELS = ("off", "low", "medium", "high")
PRICE_KEYS = ("input", "output", "cached_input")


def _price_table(r: _Reader, key: str) -> dict[str, float] | None:
    """[….prices] input / output (required) and cached_input: per million tokens."""
    if key not in r.table:
        return None
    pr = r.sub(key)
    table = {}
    for k in pr.table:
        if k not in PRICE_KEYS:
            raise pr._err(k, f"unknown price; use {', '.join(PRICE_KEYS)} (per million tokens)")
        v = pr.get(k, float)
        if v < 0:
            raise pr._err(k, "a price cannot be negative")
        table[k] = v
    for k in ("input", "output"):
        if k not in table:
            raise pr._err(k, "required (price per million tokens)")
    return table


def _prices(pr: _Reader) -> dict[str, dict[str, float]]:
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
    r = _Reader(file, data)
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
            base_url=_url(pr, "base_url", base.base_url if base else None),
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
        timeout=_positive(tr, "timeout", 30.0),
        list_timeout=_positive(tr, "list_timeout", 10.0),
        timeouts=timeouts,
        output_cap=int(_positive(tr, "output_cap", 64 * 1024)),
        builtins=tr.get("builtins", bool, True),
        dirs=tuple(dirs),
        sources=tuple(sources),
        allow_outside_root=tr.get("allow_outside_root", bool, False),
        list_concurrency=int(_positive(tr, "list_concurrency", 8)),
        llm_functions_compat=tr.get("llm_functions_compat", bool, False),
        python=tr.get("python", str),
        ts_runtime=tr.get("ts_runtime", str),
        max_parallel=_count(tr, "max_parallel", 8),
        max_calls_per_reply=_count(tr, "max_calls_per_reply", 64),
        max_offered=_count(tr, "max_offered", 256),
        include=_globs(tr, "include"),
        exclude=_globs(tr, "exclude"),
        description_cap=_count(tr, "description_cap", 8192),
        spool_max_mb=_positive(tr, "spool_max_mb", 100.0),
        spool_session_mb=_positive(tr, "spool_session_mb", 1000.0),
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
            startup_timeout=_positive(sr, "startup_timeout", 30.0),
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
        max_steps=int(_positive(r, "max_steps", 25)),
        providers=providers,
        approval=approval,
        tools=tools,
        mcp_servers=servers,
        mcp_prefix=mr.get("prefix", bool, True),
        pane_lines=int(_positive(ur, "pane_lines", 2000)),
        system_prompt=r.get("system_prompt", str),
        project_root=project_root,
        raw=dict(data),
        warnings=tuple(r.unknown_keys()),
    )


def _positive(r: _Reader, key: str, default: float) -> float:
    v = r.get(key, float, default)
    if v <= 0:
        raise r._err(key, "must be positive")
    return v


def _url(r: _Reader, key: str, default: str | None) -> str | None:
    """An http(s) URL with a host, checked here so a typo is one line, not an SDK traceback."""
    from urllib.parse import urlsplit

    v = r.get(key, str, default)
    if v is None or v == default:
        return v
    try:
        parts = urlsplit(v)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as e:
        raise r._err(key, f"not a valid URL {v!r}: {e}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise r._err(key, f"expected an http:// or https:// URL with a host, got {v!r}")
    if any(c.isspace() or ord(c) < 32 for c in v):
        raise r._err(key, f"a URL cannot contain spaces or control characters: {v!r}")
    return v


def _count(r: _Reader, key: str, default: int) -> int:
    return max(1, int(_positive(r, key, default)))  # 0.5 must not mean "none at all"


def _globs(r: _Reader, key: str) -> tuple[str, ...]:
    v = r.get(key, list, [])
    if not all(isinstance(p, str) and p for p in v):
        raise r._err(key, 'expected an array of glob patterns, e.g. ["git_*"]')
    return tuple(v)


def load(project_root: Path | None = None, user_file: Path | None = None,
         trust_state: trust.TrustState | None = None) -> Config:
    """Load user + project config. Raises ConfigError naming the file and key.

    The project's kep.toml counts only when folder trust says so (tuiapp.trust), and then
    without the entries it gained since it was trusted."""
    root = (project_root or paths.find_project_root()).resolve()
    user_file = user_file or paths.user_config_file()
    project_file = root / "kep.toml"
    state = trust_state or trust.check(root)
    merged: dict[str, Any] = {}
    files = []
    warnings: list[str] = []
    user_rules: list[Any] = []
    project_data: dict[str, Any] = {}
    for f in (user_file, project_file):
        if f == project_file and f != user_file:
            if not state.trusted:
                continue
            data = project_data = trust.withhold(_read_toml(f), state.accepted)
        else:
            data = _read_toml(f)
        if not data and not f.exists():
            continue
        # Validate each file alone, so errors and warnings name the right file.
        warnings += parse(data, f, root).warnings
        files.append(f)
        if f == user_file:
            user_rules = data.get("approval", {}).get("rules", [])
        merged = _deep_merge(merged, data)
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
    return Config(**{**cfg.__dict__, "files": tuple(files), "warnings": tuple(warnings),
                     "trust": state})


# ---- writing -----------------------------------------------------------------------------


# (path, size, mtime_ns) of the files kep itself wrote last, so hot reload can tell them apart.
_OWN_WRITES: dict[Path, tuple[int, int]] = {}


def _stat_key(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def written_by_kep(files: tuple[Path, ...]) -> bool:
    """Is the newest of these config files (the one a reload is about) exactly as kep last
    wrote it?"""
    stats = [(key, f) for f in files if (key := _stat_key(f)) is not None]
    if not stats:
        return False
    key, newest = max(stats, key=lambda kf: kf[0][1])
    return _OWN_WRITES.get(newest) == key


def write_toml_atomic(path: Path, data: Mapping[str, Any]) -> Path:
    """Atomically, keeping the mode, through a symlink (see toml_write)."""
    from tuiapp import toml_write

    written = toml_write.write_atomic(path, toml_write.dumps(data))
    if (key := _stat_key(path)) is not None:
        _OWN_WRITES[path] = key
    return written


def add_rule(file: Path, tool_regex: str, action: Action, args_regex: str | None = None) -> Rule:
    """Put a rule at the front of `file`'s approval rules, atomically, as a
    `[[approval.rules]]` table. (A deny rule elsewhere still wins: see policy.)"""
    data = _read_toml(file)
    rule: dict[str, Any] = {"tool": tool_regex, "action": action}
    if args_regex:
        rule["args"] = args_regex
    approval = dict(data.get("approval", {}))
    approval["rules"] = [rule, *approval.get("rules", [])]
    data["approval"] = approval
    write_toml_atomic(file, data)
    return Rule(tool_regex, action, args_regex, f"{file.name} rule 1")


def set_value(file: Path, key: str, value: Any) -> None:
    """Set a top-level key (e.g. theme, model) in a TOML file, atomically."""
    data = _read_toml(file)
    data[key] = value
    write_toml_atomic(file, data)


def masked(data: Any) -> Any:
    """A copy of config data with secrets replaced, by setting name and by value."""
    from tuiapp.core import secrets

    return secrets.mask_config(data)


def load_dotenv(root: Path) -> None:
    """Load <root>/.env into os.environ without overriding variables already set.
    Raises ConfigError when the file is unreadable or not UTF-8 (nothing is loaded then)."""
    env_file = root / ".env"
    if not env_file.is_file():
        return
    from dotenv import dotenv_values

    try:
        raw = env_file.read_bytes()
        raw.decode("utf-8")
    except OSError as e:
        raise ConfigError(env_file, "", f"cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise ConfigError(env_file, "", f"not valid UTF-8 at line {line}") from None
    from tuiapp.core import secrets

    values = dotenv_values(env_file)
    secrets.note_dotenv(values)  # kept from tools and redacted from their output
    for k, v in values.items():
        if v is not None and k not in os.environ:
            os.environ[k] = v
