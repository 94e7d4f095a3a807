"""Secrets: which values kep keeps from tools, from the model and from the screen.

One registry (`collect`) knows the provider keys (every configured provider's `api_key_env`,
plus the well-known ones) and every variable read from the project's `.env`, with their current
values, plus secret-looking values written in the config (an `Authorization` header, an MCP
server's `GITHUB_PAT`). From it:

- `child_env` builds the environment of every child kep starts (tools of every format, the
  discovery fork server, MCP servers): kep's own minus those variables, and minus any other
  variable holding one of those values, unless passed on purpose (`[tools] pass_env`, a
  server's `env`).
- `Secrets.redact` / `StreamRedactor` replace the values with `[redacted NAME]` in tool output
  before it reaches the model, the session store, the spool, the panes or an export.
- `scrub_error` also removes fragments of a key and key-shaped tokens from error text.
- `mask_config` hides secrets in `kep config show`, by name and by value.

Values shorter than MIN_SECRET_LEN characters are never redacted: "1" or "true" would turn
every output into noise, and so short a value is no key. Their variables are still kept from
children. No Textual here (core).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tuiapp.settings.config_types import Config

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


def note_passed(env: Mapping[str, str]) -> None:
    """Record the secret-looking values kep hands a child on purpose (an MCP server's `env`,
    mcp.json's included): the child may echo them, so they are redacted too."""
    for name, value in env.items():
        if looks_secret_name(name) or KEY_SHAPED.search(value):
            _passed_values.setdefault(value, name)


def note_dotenv(names: Iterable[str]) -> None:
    """Record the variables a `.env` file declares: from now on they are secrets."""
    _dotenv_names.update(n for n in names if is_secret_name_candidate(n))


def is_secret_name_candidate(name: str) -> bool:
    return name not in _NOT_SECRET and not name.startswith(_NOT_SECRET_PREFIXES)


def looks_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name)) and not name.lower().endswith("_env")


@dataclass(frozen=True)
class Secrets:
    """A snapshot of the registry: the names kept from children, the values redacted."""

    names: frozenset[str] = frozenset()
    values: tuple[tuple[str, str], ...] = ()  # (value, NAME), longest value first
    passed: frozenset[str] = frozenset()  # names the user passes to tools on purpose
    _rx: re.Pattern[str] | None = field(default=None, compare=False, repr=False)
    _brx: re.Pattern[bytes] | None = field(default=None, compare=False, repr=False)
    _labels: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, named: Mapping[str, str], extra_values: Iterable[tuple[str, str]] = (),
           passed: Iterable[str] = ()) -> Secrets:
        """`named`: NAME → value (value may be empty); `extra_values`: (value, label)."""
        by_value: dict[str, str] = {}
        for value, name in [*((v, n) for n, v in named.items()), *extra_values]:
            if value and len(value) >= MIN_SECRET_LEN and value not in by_value:
                by_value[value] = name
        pairs = tuple(sorted(by_value.items(), key=lambda p: -len(p[0])))
        rx = re.compile("|".join(re.escape(v) for v, _ in pairs)) if pairs else None
        brx = (re.compile(b"|".join(re.escape(v.encode()) for v, _ in pairs))
               if pairs else None)
        labels = {v: f"[redacted {n}]" for v, n in pairs}
        return cls(frozenset(named), pairs, frozenset(passed), rx, brx, labels)

    # ---- redaction -----------------------------------------------------------------------

    def _label(self, value: str) -> str:
        return self._labels.get(value, "[redacted]")

    def redact(self, text: str) -> str:
        if self._rx is None or not text:
            return text
        return self._rx.sub(lambda m: self._label(m.group()), text)

    def redact_bytes(self, data: bytes) -> bytes:
        if self._brx is None or not data:
            return data
        return self._brx.sub(lambda m: self._label(m.group().decode()).encode(), data)

    def contains_bytes(self, data: bytes) -> bool:
        return self._brx is not None and self._brx.search(data) is not None

    def contains(self, text: str) -> bool:
        return self._rx is not None and self._rx.search(text) is not None

    def stream(self) -> StreamRedactor:
        return StreamRedactor(self)

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


class StreamRedactor:
    """Redacts a byte stream that arrives in chunks: a key split across two chunks is still
    caught. Only a tail that could start a key is held back (at most len(longest)-1 bytes), so
    ordinary output streams without delay."""

    def __init__(self, secrets: Secrets) -> None:
        self.s = secrets
        self.carry = b""
        self._keys = [v.encode() for v, _ in secrets.values]
        self._firsts = {k[0] for k in self._keys}
        self._longest = max((len(k) for k in self._keys), default=0)

    def feed(self, data: bytes) -> bytes:
        brx = self.s._brx
        if brx is None:
            return data
        buf = self.carry + data
        n = len(buf)
        hold = n
        for i in range(max(0, n - self._longest + 1), n):
            if buf[i] in self._firsts:
                tail = buf[i:]
                if any(len(k) > len(tail) and k.startswith(tail) for k in self._keys):
                    hold = i
                    break
        out: list[bytes] = []
        pos = 0
        for m in brx.finditer(buf):
            if m.start() >= hold:
                break
            out += [buf[pos:m.start()], self.s._label(m.group().decode()).encode()]
            pos = m.end()
        end = max(hold, pos)
        out.append(buf[pos:end])
        self.carry = buf[end:]
        return b"".join(out)

    def flush(self) -> bytes:
        rest, self.carry = self.carry, b""
        return self.s.redact_bytes(rest)


# ---- the registry ------------------------------------------------------------------------


def collect(config: Config | None = None,
            environ: Mapping[str, str] | None = None) -> Secrets:
    """The registry as of now: provider key variables, `.env` variables and config secrets."""
    env = os.environ if environ is None else environ
    names = set(KNOWN_KEY_VARS) | _dotenv_names
    extra: list[tuple[str, str]] = list(_passed_values.items())
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
