"""What a checkout brings besides its kep.toml and mcp.json, that changes what kep runs or
allows: `.env` variables kep (or a library inside kep) reads itself, interpreters and
programs it provides (`.venv`, `node_modules/.bin`), and a `.git` whose config names commands.

Each is a trust item (a stable key and a whole, one-line label): counted by the trust
question, recorded when the user trusts, and held back when it is new since. Read without
running anything; every file is read bounded."""

from __future__ import annotations

import configparser
import os
import re
from pathlib import Path

from tuiapp.security.trust_items import item_key, one_line

MAX_READ = 1024 * 1024  # .env and .git/config: larger ones declare nothing here

# Variables that change kep's own behaviour (or that of a library in kep's process) when a
# project's .env sets them: kep's own settings, the llm-functions approval variables, where
# kep keeps its config, proxies and CA bundles (where keys are sent), provider endpoints,
# interpreter and loader paths. A tool's own variables (GITHUB_TOKEN, …) are not among them.
_BEHAVIOUR = re.compile(
    r"(KEP_.*|LLM_MCP_.*|LLM_DUMP_RESULTS|.*_PROXY|SSL_CERT_(FILE|DIR)|REQUESTS_CA_BUNDLE"
    r"|CURL_CA_BUNDLE|(OPENAI|ANTHROPIC|OPENROUTER)_(?!API_KEY$).*|PYTHON.*|LD_.*|DYLD_.*|HOME"
    r"|XDG_.*|PATH|TEXTUAL.*|WATCHFILES_.*|GIT_.*|NODE_OPTIONS|NODE_PATH|NPM_CONFIG_.*"
    r"|SHELL|TMPDIR|BROWSER|EDITOR|VISUAL)",
    re.IGNORECASE,
)

VENV_PYTHON = Path(".venv") / "bin" / "python"
NODE_BIN = Path("node_modules") / ".bin"

# Git config keys that name a command git runs (`git status` runs core.fsmonitor; `git diff`
# runs diff.external); pattern over "section.subsection.key", lower-case.
_GIT_COMMAND_KEYS = re.compile(
    r"core\.(fsmonitor|hookspath|sshcommand|pager|editor|askpass|gitproxy)"
    r"|diff\.external|diff\..+\.(command|textconv)|merge\..+\.driver"
    r"|filter\..+\.(clean|smudge|process)|credential(\..+)?\.helper|gpg(\..+)?\.program"
    r"|sequence\.editor|alias\..+|uploadpack\.packobjectshook|pager\..+"
    r"|interactive\.difffilter|include\.path|includeif\..+\.path|protocol\..+\.allow"
    r"|remote\..+\.(uploadpack|receivepack)|http\..*sslcainfo|http\..*proxy"
    r"|core\.(sshcommand)|ssh\.variant"
)
_BOOLEAN = {"true", "false", "yes", "no", "on", "off", "1", "0", ""}


def is_behaviour_variable(name: str) -> bool:
    return bool(_BEHAVIOUR.fullmatch(name))


def _bounded_text(path: Path) -> str | None:
    """A regular file's text, or None (missing, special, too big, not UTF-8)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        import stat

        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_READ:
            return None
        data = os.read(fd, MAX_READ + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def env_item(name: str, value: str) -> tuple[str, str]:
    return (item_key({"kind": ".env variable", "name": name, "value": value}),
            f".env sets {one_line(name)}={one_line(value)}")


def env_items(root: Path) -> dict[str, str]:
    """The project .env's variables that change kep's own behaviour."""
    text = _bounded_text(root / ".env")
    if not text:
        return {}
    import io

    from dotenv import dotenv_values

    out: dict[str, str] = {}
    for name, value in dotenv_values(stream=io.StringIO(text)).items():
        if value is not None and is_behaviour_variable(name):
            key, label = env_item(name, value)
            out[key] = label
    return out


def venv_item() -> tuple[str, str]:
    return (item_key({"kind": "interpreter", "path": str(VENV_PYTHON)}),
            f"interpreter {VENV_PYTHON} (runs Python tools and packs)")


def node_item() -> tuple[str, str]:
    return (item_key({"kind": "programs", "path": str(NODE_BIN)}),
            f"programs in {NODE_BIN} (e.g. tsx for TypeScript tools)")


def runtime_items(root: Path) -> dict[str, str]:
    """Interpreters and programs the checkout provides, which kep would otherwise prefer."""
    out: dict[str, str] = {}
    if os.path.lexists(root / VENV_PYTHON):
        key, label = venv_item()
        out[key] = label
    if os.path.isdir(root / NODE_BIN):
        key, label = node_item()
        out[key] = label
    return out


def git_config_file(root: Path) -> Path | None:
    """The config file of the repository at root (a worktree's `.git` file followed)."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git / "config"
    text = _bounded_text(dot_git)
    if text and text.startswith("gitdir:"):
        gitdir = Path(text[len("gitdir:"):].strip())
        gitdir = gitdir if gitdir.is_absolute() else root / gitdir
        common = _bounded_text(gitdir / "commondir")
        base = (gitdir / common.strip()) if common else gitdir
        return base / "config"
    return None


def git_commands(root: Path) -> list[tuple[str, str]]:
    """(key, value) of every entry of the repository's config that names a command."""
    file = git_config_file(root)
    text = _bounded_text(file) if file else None
    if not text:
        return []
    parser = configparser.RawConfigParser(strict=False, interpolation=None,
                                          comment_prefixes=("#", ";"),
                                          inline_comment_prefixes=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return [("config", "unreadable .git/config (treated as naming commands)")]
    found = []
    for section in parser.sections():
        head, _, sub = section.partition(" ")
        prefix = head.lower() + (f".{sub.strip().strip(chr(34))}" if sub else "")
        for key, value in parser.items(section):
            full = f"{prefix}.{key.lower()}"
            lowered = full.lower()
            if not _GIT_COMMAND_KEYS.fullmatch(lowered):
                continue
            if lowered == "core.fsmonitor" and (value or "").strip().lower() in _BOOLEAN:
                continue  # the built-in daemon, not a command
            if lowered.startswith("alias.") and not (value or "").lstrip().startswith("!"):
                continue  # an alias to a git subcommand runs nothing new
            found.append((full, value or ""))
    return found


def git_item(key: str, value: str) -> tuple[str, str]:
    return (item_key({"kind": "git config", "key": key, "value": value}),
            f".git/config {one_line(key)} = {one_line(value)}")


def git_items(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in git_commands(root):
        k, label = git_item(key, value)
        out[k] = label
    return out


def file_items(root: Path) -> dict[str, str]:
    """Every item of this module's kinds, in a stable order."""
    return {**env_items(root), **runtime_items(root), **git_items(root)}
