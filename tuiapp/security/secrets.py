"""Secrets: which values kep keeps from tools, from the model and from the screen.

One registry (`collect`) knows the provider keys (every configured provider's `api_key_env`,
plus the well-known ones) and every variable read from the project's `.env`, with their current
values, plus secret-looking values written in the config (an `Authorization` header, an MCP
server's `GITHUB_PAT`). From it:

- `child_env` builds the environment of every child kep starts (tools of every format, the
  discovery fork server, MCP servers): kep's own minus those variables, and minus any other
  variable holding one of those values, unless passed on purpose (`[tools] pass_env`, a
  server's `env`).
- `Secrets.redact` / `Secrets.stream` (the one filter, security/redact) replace the values,
  any 12 characters of them and their base64/hex/percent encodings with `[redacted NAME]`, in
  everything that leaves kep: provider requests, the session store, the spool, the panes,
  exports, logs and `kep mcp serve` results (`active()` is the registry those use).
- `scrub_error` also removes fragments of a key and key-shaped tokens from error text.
- `mask_config` hides secrets in `kep config show`, by name and by value.

Values shorter than MIN_SECRET_LEN characters are never redacted: "1" or "true" would turn
every output into noise, and so short a value is no key. Their variables are still kept from
children. Values of MIN_SECRET_LEN to 11 characters are redacted whole only (see redact).
No Textual here (core).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuiapp.security.redact import Filter, StreamFilter

if TYPE_CHECKING:
    from tuiapp.settings.config_types import Config
    from tuiapp.vocab.messages import Message
    from tuiapp.vocab.tool_specs import ToolSpec

MIN_SECRET_LEN = 8
MIN_FRAGMENT = 8  # a run this long of a key, found in an error text, is scrubbed
KNOWN_KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY")
# Variables a `.env` may set that are configuration, not secrets: never kept from children.
_NOT_SECRET = frozenset({"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "TZ",
                         "TMPDIR", "PWD", "PYTHONPATH", "VIRTUAL_ENV"})
_NOT_SECRET_PREFIXES = ("LC_", "KEP_", "LLM_")
# Setting names that hold secrets (config keys, header names, env names).
SECRET_NAME = re.compile(
    r"key|token|secret|passw|authorization|cookie|credential|auth|(^|[_-])pat($|[_-])", re.I
)
# Tokens shaped like API keys, in any text: vendor prefixes, bearer tokens, masked keys.
KEY_SHAPED = re.compile(
    r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-*.]{6,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{10,}|\bgithub_pat_[A-Za-z0-9_]{10,}"
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}|\bAKIA[0-9A-Z]{12,}|\bAIza[A-Za-z0-9_-]{20,}"
    r"|\bhf_[A-Za-z0-9]{10,}|\bglpat-[A-Za-z0-9_-]{10,}"
    r"|(?i:\bbearer\s+)[A-Za-z0-9_\-.=+/*]{12,}"
    r"|[A-Za-z0-9_-]*\*{4,}[A-Za-z0-9_-]*"
)

# Names read from the project's `.env` (process-wide, like the os.environ they were put in).
_dotenv_names: set[str] = set()
_passed_values: dict[str, str] = {}  # value → name, handed to a child on purpose
_dotenv_values: dict[str, str] = {}  # value → name, as the `.env` file says (even if overridden)
_last_config: Config | None = None  # the config `active()` reads provider settings from


def note_passed(env: Mapping[str, str], args: Iterable[str] = ()) -> None:
    """Record the secret-looking values kep hands a child on purpose (an MCP server's `env`,
    mcp.json's included, and a token on its command line): the child may echo them, so they
    are redacted too."""
    for name, value in env.items():
        if looks_secret_name(name) or KEY_SHAPED.search(value):
            _passed_values.setdefault(value, name)
    for i, arg in enumerate(args):
        if m := KEY_SHAPED.search(arg):
            _passed_values.setdefault(m.group(), f"argument {i + 1}")


def note_dotenv(values: Mapping[str, str | None] | Iterable[str]) -> None:
    """Record the variables a `.env` file declares: from now on they are secrets. Their values
    too, as the file has them: one that the environment overrides is still in the file, which
    a tool may read."""
    names = list(values)
    _dotenv_names.update(n for n in names if is_secret_name_candidate(n))
    if isinstance(values, Mapping):
        for name in names:
            value = values[name]
            if value and is_secret_name_candidate(name):
                _dotenv_values.setdefault(value, name)


def is_secret_name_candidate(name: str) -> bool:
    return name not in _NOT_SECRET and not name.startswith(_NOT_SECRET_PREFIXES)


def looks_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name)) and not name.lower().endswith("_env")


@dataclass(frozen=True)
class Secrets:
    """A snapshot of the registry: the names kept from children, the values redacted (by the
    one filter, security/redact: pieces of 12 characters and encodings too)."""

    names: frozenset[str] = frozenset()
    values: tuple[tuple[str, str], ...] = ()  # (value, NAME), longest value first
    passed: frozenset[str] = frozenset()  # names the user passes to tools on purpose
    _filter: Filter = field(default_factory=lambda: Filter(()), compare=False, repr=False)

    @classmethod
    def of(cls, named: Mapping[str, str], extra_values: Iterable[tuple[str, str]] = (),
           passed: Iterable[str] = ()) -> Secrets:
        """`named`: NAME → value (value may be empty); `extra_values`: (value, label)."""
        by_value: dict[str, str] = {}
        for value, name in [*((v, n) for n, v in named.items()), *extra_values]:
            if value and len(value) >= MIN_SECRET_LEN and value not in by_value:
                by_value[value] = name
        pairs = tuple(sorted(by_value.items(), key=lambda p: -len(p[0])))
        return cls(frozenset(named), pairs, frozenset(passed), _filter_for(pairs))

    # ---- redaction -----------------------------------------------------------------------

    def redact(self, text: str) -> str:
        return self._filter.redact(text)

    def redact_bytes(self, data: bytes) -> bytes:
        return self._filter.redact_bytes(data)

    def contains_bytes(self, data: bytes) -> bool:
        return self._filter.contains_bytes(data)

    def contains(self, text: str) -> bool:
        return self._filter.contains(text)

    def stream(self) -> StreamFilter:
        return self._filter.stream()

    # ---- the child's environment -----------------------------------------------------------

    def child_env(self, base: Mapping[str, str] | None = None,
                  keep: Iterable[str] = ()) -> dict[str, str]:
        """`base` (default: kep's environment) minus every secret variable, and minus any
        variable whose value is a secret, except the names in `keep` and `[tools] pass_env`."""
        env = dict(os.environ if base is None else base)
        kept = self.passed | frozenset(keep)
        values = {v for v, _ in self.values}
        return {k: v for k, v in env.items()
                if k in kept or (k not in self.names and v not in values)}


StreamRedactor = StreamFilter  # the name callers knew


@lru_cache(maxsize=8)
def _filter_for(pairs: tuple[tuple[str, str], ...]) -> Filter:
    """Building the index costs ~0.3 ms a value: the same values share one."""
    return Filter(pairs)


# ---- the registry ------------------------------------------------------------------------


def collect(config: Config | None = None,
            environ: Mapping[str, str] | None = None) -> Secrets:
    """The registry as of now: provider key variables, `.env` variables and config secrets.
    Without a config, the last one given (kep loads one before anything leaves)."""
    global _last_config
    if config is None:
        config = _last_config
    else:
        _last_config = config
    env = os.environ if environ is None else environ
    names = set(KNOWN_KEY_VARS) | _dotenv_names
    extra: list[tuple[str, str]] = [*_passed_values.items(), *_dotenv_values.items()]
    passed: tuple[str, ...] = ()
    if config is not None:
        names.update(p.api_key_env for p in config.providers.values() if p.api_key_env)
        for p in config.providers.values():
            extra += _header_secrets(p.headers)
        for s in config.mcp_servers.values():
            extra += [(v, k) for k, v in s.env.items() if looks_secret_name(k)]
        passed = tuple(getattr(config.tools, "pass_env", ()))
    named = {n: env.get(n, "") for n in names}
    return Secrets.of(named, extra, passed)


def active() -> Secrets:
    """The registry every egress filters with: the store, the spool, provider requests,
    exports, logs and `kep mcp serve` (see module doc)."""
    return collect()


def redact_data(data: Any, s: Secrets | None = None) -> Any:
    """A copy of JSON-like data with every string (keys too) filtered."""
    s = s if s is not None else active()
    if s._filter.empty:
        return data
    if isinstance(data, str):
        return s.redact(data)
    if isinstance(data, Mapping):
        return {redact_data(k, s): redact_data(v, s) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact_data(v, s) for v in data]
    return data


def redact_json_text(text: str, s: Secrets | None = None) -> str:
    """JSON text with its strings filtered (a label in the raw text could cut an escape); text
    that is not JSON is filtered as text."""
    s = s if s is not None else active()
    if s._filter.empty or not s.contains(text):
        return text
    if text[:1] in ("{", "["):
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            pass
        else:
            return json.dumps(redact_data(data, s), ensure_ascii=False)
    return s.redact(text)


def outgoing(messages: Sequence[Message], tools: Sequence[ToolSpec], system: str | None,
             s: Secrets | None = None) -> tuple[list[Message], list[ToolSpec], str | None]:
    """A request as it may leave for a provider: every text in it filtered (what the user
    typed or included, documents, the system prompt, tool results, the model's own text and
    calls sent back, tool descriptions). Providers get it through Provider.stream, always."""
    s = s if s is not None else active()
    if s._filter.empty:
        return list(messages), list(tools), system
    out = [_message_out(m, s) for m in messages]
    specs = [t if not s.contains(json.dumps([t.description, t.parameters], default=str))
             else replace(t, description=s.redact(t.description),
                          parameters=redact_data(t.parameters, s))
             for t in tools]
    return out, specs, s.redact(system) if system else system


def _message_out(m: Message, s: Secrets) -> Message:
    changes: dict[str, Any] = {}
    if m.content and s.contains(m.content):
        changes["content"] = s.redact(m.content)
    if m.tool_calls:
        changes["tool_calls"] = tuple(
            replace(c, arguments=redact_data(c.arguments, s), raw_arguments=s.redact(
                c.raw_arguments)) for c in m.tool_calls)
    if any(not a.is_image and s.contains(a.text) for a in m.attachments):
        changes["attachments"] = tuple(a if a.is_image else replace(a, text=s.redact(a.text))
                                       for a in m.attachments)
    if m.reasoning is not None:
        r = m.reasoning
        changes["reasoning"] = replace(r, text=s.redact(r.text),
                                       items=tuple(redact_data(i, s) for i in r.items))
    return replace(m, **changes) if changes else m


def _header_secrets(headers: Mapping[str, str]) -> list[tuple[str, str]]:
    """(value, header name) of the headers that carry a credential."""
    out = []
    for k, v in headers.items():
        if looks_secret_name(k) or KEY_SHAPED.search(v):
            out.append((v, k))
            token = v.split(None, 1)[-1]  # "Bearer sk-…": the token alone too
            if token != v:
                out.append((token, k))
    return out


def child_env(config: Config | None, base: Mapping[str, str] | None = None,
              keep: Iterable[str] = ()) -> dict[str, str]:
    """The one place a child's environment is built (see Secrets.child_env), with git's
    overrides for a checkout whose git config is not trusted (security.git_guard)."""
    env = collect(config).child_env(base, keep)
    if config is not None:
        from tuiapp.security import git_guard, trust

        env.update(git_guard.guard_env(Path(config.project_root), trust.state_of(config)))
    return env


def expand_vars(env: Mapping[str, str], source: Mapping[str, str] | None = None
                ) -> dict[str, str]:
    """`${VAR}` in an MCP server's `env` values, from kep's own environment (unset: empty)."""
    src = os.environ if source is None else source
    return {k: re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: src.get(m.group(1), ""), v)
            for k, v in env.items()}


# ---- error text and config display ----------------------------------------------------------


def scrub_error(text: str, secrets: Secrets | None = None,
                extra: Iterable[str | None] = ()) -> str:
    """Error text without any key: whole values, runs of MIN_FRAGMENT or more characters of
    one (an API echoing a prefix), and key-shaped tokens."""
    s = secrets if secrets is not None else collect()
    more = [(v, "key") for v in extra if v]
    if more:
        s = Secrets.of(dict.fromkeys(s.names, ""), [*s.values, *more])
    text = KEY_SHAPED.sub("[redacted]", s.redact(text))
    marks = bytearray(len(text))
    for value, _ in s.values:
        for i in range(len(value) - MIN_FRAGMENT + 1):
            frag = value[i:i + MIN_FRAGMENT]
            start = text.find(frag)
            while start != -1:
                marks[start:start + MIN_FRAGMENT] = b"\1" * MIN_FRAGMENT
                start = text.find(frag, start + 1)
    if any(marks):
        out, i = [], 0
        while i < len(text):
            if marks[i]:
                while i < len(text) and marks[i]:
                    i += 1
                out.append("[redacted]")
            else:
                out.append(text[i])
                i += 1
        text = "".join(out)
    return text


def mask_config(data: Any, secrets: Secrets | None = None, key: str = "") -> Any:
    """A copy of config data with secrets replaced by "****": by setting name (an API key, a
    header like Authorization, an env var like GITHUB_PAT) and by value (a known key, or a
    key-shaped token, under any name)."""
    s = secrets if secrets is not None else collect()
    if isinstance(data, Mapping):
        return {k: mask_config(v, s, str(k)) for k, v in data.items()}
    if isinstance(data, list):
        return [mask_config(v, s, key) for v in data]
    secret = isinstance(data, str) and data and (
        looks_secret_name(key) or s.contains(data) or KEY_SHAPED.search(data))
    return "****" if secret else data
