"""The typed settings records: providers, approval rules, tools, MCP servers and the whole Config.

Built by tuiapp.settings.config (parse/load); ConfigError is what every config reader and
writer raises,
naming the file and the key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tuiapp.vocab.records import FrozenRecord
from tuiapp.vocab.trust_state import TrustState

Api = Literal["responses", "chat", "anthropic", "offline"]
Action = Literal["allow", "ask", "deny"]
# Approval modes, strictest first (their meaning: tuiapp.security.modes). yolo is a session's
# choice only: a file may name it in a rule's `modes`, never as `[approval] mode`.
APPROVAL_MODES = ("read-only", "ask", "auto", "yolo")
# The settings classes below are @dataclass(frozen=True, eq=False, repr=False) on FrozenRecord:
# same equality, hash and repr as plain frozen dataclasses, cheaper to import (startup path).


class ConfigError(Exception):
    def __init__(self, file: Path | str, key: str, message: str) -> None:
        self.file, self.key, self.message = str(file), key, message
        super().__init__(f"{file}: {key}: {message}" if key else f"{file}: {message}")


@dataclass(frozen=True, eq=False, repr=False)
class ModelOptions(FrozenRecord):
    """What a request asks of the model; None everywhere: each API's own default."""

    temperature: float | None = None
    max_output_tokens: int | None = None
    reasoning: str | None = None  # "low" | "medium" | "high" | "off"
    context_window: int | None = None  # tokens; None: known for common models, else unknown

    def over(self, base: ModelOptions) -> ModelOptions:
        """These options, with `base`'s where these are unset."""
        return ModelOptions(*(a if a is not None else b for a, b in zip(
            self.fields(), base.fields(), strict=True)))

    def fields(self) -> tuple[float | int | str | None, ...]:
        return (self.temperature, self.max_output_tokens, self.reasoning, self.context_window)


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
    options: ModelOptions = field(default_factory=ModelOptions)  # [providers.NAME] itself
    model_options: dict[str, ModelOptions] = field(default_factory=dict)  # models."M"

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def prices_for(self, model: str) -> dict[str, float] | None:
        return self.prices.get(model) or self.prices.get("")

    def options_for(self, model: str) -> ModelOptions:
        """The model's own options over the provider's."""
        own = self.options
        if own.reasoning is None and self.reasoning is not None:
            own = ModelOptions(own.temperature, own.max_output_tokens, self.reasoning,
                               own.context_window)
        return self.model_options.get(model, ModelOptions()).over(own)


BUILTIN_PROVIDERS: dict[str, ProviderConfig] = {
    p.name: p
    for p in (
        ProviderConfig("offline", "offline"),
        ProviderConfig(
            "openai", "responses", None, "OPENAI_API_KEY", default_model="gpt-6.1-terra"
        ),
        ProviderConfig(
            "anthropic", "anthropic", None, "ANTHROPIC_API_KEY", default_model="claude-sonnet-5-5"
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
    deny_message: str = ""  # what the model and the user read when this rule denies
    expires_at: float | None = None  # epoch seconds: the rule stops applying then
    # Examples checked when the rules load (argument objects): each `match` must be decided
    # by this rule, no `not_match` may be.
    match: tuple[dict[str, Any], ...] = field(default=(), compare=False)
    not_match: tuple[dict[str, Any], ...] = field(default=(), compare=False)
    # The argument that holds a command line: tools this rule names are shell-like
    # (core/shell_split.py), so every simple command of that line must be allowed.
    shell: str | None = None
    modes: tuple[str, ...] = ()  # the approval modes it applies in (core/modes.py); () = all
    # Where it was read (rules screen, `kep rules list`, events): file, 1-based line (0:
    # unknown), the comment above it ("always" rules say who added them and when).
    file: str = field(default="", compare=False)
    line: int = field(default=0, compare=False)
    note: str = field(default="", compare=False)

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def describe(self) -> str:
        a = f", arguments match {self.args}" if self.args else ""
        return f"{self.origin} (tool matches {self.tool}{a})"


@dataclass(frozen=True, eq=False, repr=False)
class ApprovalConfig(FrozenRecord):
    default: Action = "ask"
    rules: tuple[Rule, ...] = ()
    mode: str = "ask"  # core/modes.py: read-only | ask | auto | yolo
    sandboxed: bool = False  # a sandbox is in force for tools (what `auto` needs)


@dataclass(frozen=True, eq=False, repr=False)
class HookConfig(FrozenRecord):
    event: str  # config_hooks.EVENTS
    argv: tuple[str, ...]  # a string command is ("/bin/sh", "-c", command)
    matcher: str | None = None  # regex, full match against the tool name (tool events)
    timeout: float = 10.0
    origin: str = ""  # "kep.toml hook 2", for messages and the rules screen
    file: str = field(default="", compare=False)

    def command_text(self) -> str:
        return self.argv[2] if self.argv[:2] == ("/bin/sh", "-c") else " ".join(self.argv)


@dataclass(frozen=True, eq=False, repr=False)
class NotifyConfig(FrozenRecord):
    """[ui] notify_*: how a question that waits gets noticed (ui/waiting_notice.py)."""

    after: float = 5.0  # seconds a question waits first (0: never)
    bell: bool = True  # ring the terminal's bell
    desktop: str = "auto"  # "auto" | "osc9" | "osc777" | "notify-send" | "off"


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
    log_level: str | None = None  # logging/setLevel sent once connected (debug … emergency)


@dataclass(frozen=True, eq=False, repr=False)
class SandboxRule(FrozenRecord):
    """One tool's or MCP server's changes to the profile ([sandbox.tools.NAME])."""

    network: str | tuple[str, ...] | None = None
    writable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False, repr=False)
class SandboxConfig(FrozenRecord):
    """[sandbox]: the kernel walls every child runs behind (tuiapp/security/sandbox)."""

    enabled: bool = True
    required: bool = False  # refuse to run tools when the walls cannot be built here
    network: str | tuple[str, ...] = "ask"  # "off", "on", "ask" or hosts ("host[:port]")
    writable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    tools: dict[str, SandboxRule] = field(default_factory=dict)
    servers: dict[str, SandboxRule] = field(default_factory=dict)


@dataclass(frozen=True, eq=False, repr=False)
class Config(FrozenRecord):
    model: str | None = None
    theme: str = "dark"
    max_steps: int = 25
    # Share of the model's context window that starts an automatic compaction (1: never).
    compact_at: float = 0.85
    providers: dict[str, ProviderConfig] = field(default_factory=lambda: dict(BUILTIN_PROVIDERS))
    approval: ApprovalConfig = field(default_factory=ApprovalConfig)
    tools: ToolsConfig = field(default_factory=ToolsConfig)
    mcp_servers: dict[str, McpServerConfig] = field(default_factory=dict)
    mcp_prefix: bool = True
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    hooks: tuple[HookConfig, ...] = ()  # [[hooks]]: the project's first, then the user's
    pane_lines: int = 2000
    notify: NotifyConfig = field(default_factory=NotifyConfig)
    system_prompt: str | None = None
    keys: dict[str, Any] = field(default_factory=dict)  # [keys] of the user config: action = key
    project_root: Path = field(default_factory=Path.cwd)
    files: tuple[Path, ...] = ()  # the files that were read, lowest precedence first
    warnings: tuple[str, ...] = ()  # unknown keys, one line each (the rest still applies)
    raw: dict[str, Any] = field(default_factory=dict, compare=False)
    # The folder-trust decision this config was loaded under (None: built by hand, decided
    # from project_root when asked; see tuiapp.security.trust.state_of).
    trust: TrustState | None = None

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
