"""Typed settings: the user's config.toml merged with the project's kep.toml (project wins).

Read with tomllib, written with tomli_w atomically. A bad file or value raises ConfigError
naming the file and the key; callers print it, never a traceback.
"""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tuiapp import paths, trust
from tuiapp.records import FrozenRecord

Api = Literal["responses", "chat", "anthropic", "offline"]
Action = Literal["allow", "ask", "deny"]
SECRET_KEY = re.compile(r"key|token|secret|password|authorization|cookie", re.I)
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

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None


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
    args: str | None = None  # regex, searched in the canonical JSON of the arguments
    origin: str = ""  # "file.toml rule 3", for messages

    def describe(self) -> str:
        a = f", args ~ /{self.args}/" if self.args else ""
        return f"{self.origin}: tool ~ /{self.tool}/{a} → {self.action}"


@dataclass(frozen=True, eq=False, repr=False)
class ApprovalConfig(FrozenRecord):
    default: Action = "ask"
    rules: tuple[Rule, ...] = ()


@dataclass(frozen=True, eq=False, repr=False)
class SourceConfig(FrozenRecord):
    format: str
    path: str


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


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(path, "", f"not valid TOML: {e}") from None
    except UnicodeDecodeError as e:
        raise ConfigError(path, "", f"not valid UTF-8 (byte {e.start})") from None
    except OSError as e:
        raise ConfigError(path, "", f"cannot read: {e.strerror}") from None


def _deep_merge(low: Mapping[str, Any], high: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(low)
    for k, v in high.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


class _Reader:
    """Pulls typed values out of one table, naming file and dotted key on error."""

    def __init__(self, file: Path | str, table: Mapping[str, Any], prefix: str = "") -> None:
        self.file, self.table, self.prefix = file, table, prefix

    def _err(self, key: str, msg: str) -> ConfigError:
        return ConfigError(self.file, f"{self.prefix}{key}", msg)

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
        if key not in self.table:
            return default
        v = self.table[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        # TOML ints are acceptable where floats are expected; bools are not numbers here.
        if float in kinds and isinstance(v, int) and not isinstance(v, bool):
            return float(v)
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
        return _Reader(self.file, self.get(key, dict, {}), f"{self.prefix}{key}.")

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


def parse(data: Mapping[str, Any], file: Path | str, project_root: Path) -> Config:
    r = _Reader(file, data)
    providers = dict(BUILTIN_PROVIDERS)
    for name, table in r.get("providers", dict, {}).items():
        pr = _Reader(file, table if isinstance(table, dict) else {}, f"providers.{name}.")
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
            base_url=pr.get("base_url", str, base.base_url if base else None),
            api_key_env=pr.get("api_key_env", str, base.api_key_env if base else None),
            headers=pr.str_map("headers"),
            default_model=pr.get("default_model", str, base.default_model if base else None),
        )

    ar = r.sub("approval")
    rules = []
    for i, raw in enumerate(ar.get("rules", list, []), 1):
        if not isinstance(raw, dict):
            raise ConfigError(file, f"approval.rules[{i}]", "expected a table")
        rr = _Reader(file, raw, f"approval.rules[{i}].")
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
        if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
            raise ConfigError(file, f"tools.timeouts.{k}", "expected a positive number of seconds")
        timeouts[k] = float(v)
    sources = []
    for i, raw in enumerate(tr.get("sources", list, []), 1):
        sr = _Reader(file, raw if isinstance(raw, dict) else {}, f"tools.sources[{i}].")
        fmt = sr.choice(
            "format", ("keprompt", "llm-functions", "loki", "extension", "aitool"), None
        )
        path = sr.get("path", str)
        if fmt is None or path is None:
            raise ConfigError(file, f"tools.sources[{i}]", "needs format and path")
        sources.append(SourceConfig(fmt, path))
    dirs = tr.get("dirs", list, [])
    if not all(isinstance(d, str) for d in dirs):
        raise ConfigError(file, "tools.dirs", "expected an array of strings")
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
    )

    mr = r.sub("mcp")
    servers = {}
    for name, table in mr.get("servers", dict, {}).items():
        if not isinstance(table, dict):
            raise ConfigError(file, f"mcp.servers.{name}", "expected a table")
        sr = _Reader(file, table, f"mcp.servers.{name}.")
        args = sr.get("args", list, [])
        servers[name] = McpServerConfig(
            name=name,
            command=sr.get("command", str),
            args=tuple(str(a) for a in args),
            env=sr.str_map("env"),
            url=sr.get("url", str),
            enabled=sr.get("enabled", bool, True),
            startup_timeout=_positive(sr, "startup_timeout", 30.0),
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
    )


def _positive(r: _Reader, key: str, default: float) -> float:
    v = r.get(key, float, default)
    if v <= 0:
        raise r._err(key, "must be positive")
    return v


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
        parse(data, f, root)  # validate each file alone so errors name the right file
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
    return Config(**{**cfg.__dict__, "files": tuple(files), "trust": state})


# ---- writing -----------------------------------------------------------------------------


def write_toml_atomic(path: Path, data: Mapping[str, Any]) -> None:
    import tomli_w  # only writers need it (not on the way to the first frame)

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            tomli_w.dump(dict(data), f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def add_rule(file: Path, tool_regex: str, action: Action, args_regex: str | None = None) -> Rule:
    """Put a rule at the front of `file`'s approval rules (first match wins), atomically."""
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


def masked(data: Any, key: str = "") -> Any:
    """A copy of config data with anything that looks like a secret replaced."""
    if isinstance(data, Mapping):
        return {k: masked(v, k) for k, v in data.items()}
    if isinstance(data, list):
        return [masked(v, key) for v in data]
    if isinstance(data, str) and SECRET_KEY.search(key) and not key.endswith("_env"):
        return "****" if data else data
    return data


def load_dotenv(root: Path) -> None:
    """Load <root>/.env into os.environ without overriding variables already set."""
    env_file = root / ".env"
    if not env_file.is_file():
        return
    from dotenv import dotenv_values

    for k, v in dotenv_values(env_file).items():
        if v is not None and k not in os.environ:
            os.environ[k] = v
