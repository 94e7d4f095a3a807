"""llm-functions / AIChat agents: `agents/NAME/index.yaml` → instructions, variables, tools.

An agent is a directory with `index.yaml` (name, description, version, instructions,
variables, conversation_starters, documents, dynamic_instructions), its own tools in
`tools.{sh,py,js}` (declared by the llm-functions format) and `tools.txt` naming shared tools
of the same llm-functions root. No textual here.
"""

from __future__ import annotations

import datetime as _dt
import glob
import locale
import os
import platform
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tuiapp.conversation import agent_yaml, loki_agent
from tuiapp.conversation.agent_model import Agent, AgentError
from tuiapp.settings.config_types import Config
from tuiapp.vocab.tool_specs import ToolSpec

DOCUMENT_CAP = 64 * 1024  # bytes per document read into the context
DOCUMENTS_TOTAL_CAP = 256 * 1024
BUILTIN_NAMES = ("__os__", "__os_family__", "__arch__", "__shell__", "__locale__", "__now__",
                 "__cwd__", "__tools__")


def unknown_mcp_servers(agent: Agent, config: Config) -> list[str]:
    """A notice for each `mcp_servers` entry no configured server answers to."""
    if not agent.mcp_servers:
        return []
    from tuiapp.mcp.servers import McpJsonError, configured_servers

    try:
        known = set(configured_servers(config))
    except McpJsonError:
        return []  # the bad mcp.json is reported where servers are started
    missing = [n for n in agent.mcp_servers if n not in known]
    return [f"agent {agent.name}: mcp_servers {', '.join(missing)} not configured (mcp.json, "
            "functions/mcp.json or [mcp.servers]); their tools are not offered"] if missing else []


# ---- finding agents ------------------------------------------------------------------------

def llm_roots(root: Path, config: Config | None) -> list[Path]:
    """Where agents/ may live: the project root, then every llm-functions tools source and
    the config dir of every Loki source."""
    out = [root]
    for src in (config.tools.sources if config else ()):
        p = Path(src.path).expanduser()
        p = p if p.is_absolute() else root / p
        if src.format == "llm-functions":
            out.append(p)
        elif src.format == "loki":
            from tuiapp.tools.formats.loki import functions_dir

            out.append(functions_dir(p).parent)
    return list(dict.fromkeys(out))


def list_agents(root: Path, config: Config | None = None) -> list[Path]:
    """Agent directories (an llm-functions index.yaml, or a Loki config.yaml / graph.yaml),
    first root wins for a name."""

    seen: dict[str, Path] = {}
    for base in llm_roots(root, config):
        d = base / "agents"
        if not d.is_dir():
            continue
        for p in sorted(d.iterdir()):
            if (p / "index.yaml").is_file() or loki_agent.is_loki_agent_dir(p):
                seen.setdefault(p.name, p)
    return list(seen.values())


def find_agent(root: Path, name: str, config: Config | None = None) -> Path:
    agents = list_agents(root, config)
    for p in agents:
        if p.name == name:
            return p
    known = ", ".join(p.name for p in agents) or "none"
    raise AgentError(f"no agent {name!r}: looked for agents/{name}/index.yaml or config.yaml under "
                     f"{', '.join(str(r) for r in llm_roots(root, config))} (agents: {known})")


def load_agent(agent_dir: Path) -> Agent:
    if loki_agent.is_loki_agent_dir(agent_dir):
        return loki_agent.load(agent_dir)

    index = agent_yaml.AgentYaml(agent_dir / "index.yaml")
    return Agent(**index.common_fields(agent_dir),
                 shared_tools=read_tools_txt(agent_dir / "tools.txt"))


def read_tools_txt(path: Path) -> list[str]:
    """`fs_cat.sh` lines → tool names (`fs_cat`); `#` comments and blanks skipped."""
    if not path.is_file():  # a FIFO would block the read for ever
        return []
    try:
        lines = path.read_bytes()[:1 << 20].decode("utf-8", errors="replace").splitlines()
    except OSError:
        return []
    names = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        stem = line.rsplit("/", 1)[-1]
        for suffix in (".sh", ".py", ".js"):
            stem = stem.removesuffix(suffix)
        names.append(stem.replace("-", "_"))
    return names


# ---- instructions --------------------------------------------------------------------------

def builtin_values(cwd: Path, tools: Iterable[ToolSpec]) -> dict[str, str]:
    system = platform.system().lower()
    os_name = {"darwin": "macos"}.get(system, system)
    machine = platform.machine()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine.lower(), machine)
    shell = Path(os.environ.get("SHELL", "") or ("cmd" if os.name == "nt" else "sh")).name
    now = _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {
        "__os__": os_name,
        "__os_family__": "windows" if os.name == "nt" else "unix",
        "__arch__": arch,
        "__shell__": shell,
        "__locale__": _locale(),
        "__now__": now,
        "__cwd__": str(cwd),
        "__tools__": tools_listing(tools),
    }


def _locale() -> str:
    raw = (os.environ.get("LC_ALL") or os.environ.get("LC_MESSAGES") or os.environ.get("LANG")
           or (locale.getlocale()[0] or ""))
    tag = raw.split(".")[0].split("@")[0]
    if not tag or tag in ("C", "POSIX"):
        return "en-US"
    return tag.replace("_", "-")


def tools_listing(tools: Iterable[ToolSpec]) -> str:
    """AIChat's `{{__tools__}}`: `1. name: first line of the description` per tool."""
    lines = []
    for i, t in enumerate(sorted(tools, key=lambda t: t.name), 1):
        first = t.description.split("\n", 1)[0] if t.description else ""
        lines.append(f"{i}. {t.name}: {first}")
    return "\n".join(lines)


def interpolate(template: str, values: Mapping[str, str]) -> str:
    """`{{name}}` → value for known names; unknown placeholders stay as written (AIChat)."""
    return re.sub(r"\{\{(\w+)\}\}", lambda m: values.get(m.group(1), m.group(0)), template)


# ---- documents -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Documents:
    text: str  # a context section, or ""
    notices: tuple[str, ...] = ()


def read_documents(agent: Agent, project_root: Path) -> Documents:
    """Local documents (files, dirs, globs; relative to the agent dir) read as text under a
    size cap. URLs are skipped: kep has no RAG yet."""
    notices: list[str] = []
    sections: list[str] = []
    total = 0
    for entry in agent.documents:
        if re.match(r"^[a-z][a-z0-9+.-]*://", entry, re.I):
            notices.append(f"agent {agent.name}: document {entry} skipped: kep has no RAG yet, "
                           "so remote documents are not fetched")
            continue
        files = _document_files(agent.dir, entry)
        if not files:
            notices.append(f"agent {agent.name}: document {entry} not found in {agent.dir}")
        for f in files:
            if total >= DOCUMENTS_TOTAL_CAP:
                notices.append(f"agent {agent.name}: documents cut at "
                               f"{DOCUMENTS_TOTAL_CAP // 1024} KiB in all; {f.name} and later "
                               "ones left out")
                return Documents(_join(sections), tuple(notices))
            data = f.read_bytes()[:DOCUMENT_CAP + 1]
            if b"\0" in data[:4096]:
                notices.append(f"agent {agent.name}: document {f.name} is binary; skipped")
                continue
            body = data[:DOCUMENT_CAP].decode("utf-8", errors="replace")
            if len(data) > DOCUMENT_CAP:
                body += f"\n… [cut at {DOCUMENT_CAP // 1024} KiB]"
                notices.append(f"agent {agent.name}: document {f.name} cut at "
                               f"{DOCUMENT_CAP // 1024} KiB")
            total += len(body.encode())
            sections.append(f"### {_shown(f, agent.dir)}\n\n{body.rstrip()}")
    return Documents(_join(sections), tuple(notices))


def _join(sections: list[str]) -> str:
    return ("## Documents\n\n" + "\n\n".join(sections)) if sections else ""


def _shown(path: Path, base: Path) -> str:
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


def _document_files(base: Path, entry: str) -> list[Path]:
    p = Path(entry).expanduser()
    full = p if p.is_absolute() else base / p
    if any(c in entry for c in "*?["):
        return [Path(x) for x in sorted(glob.glob(str(full), recursive=True)) if Path(x).is_file()]
    if full.is_dir():
        return sorted(x for x in full.rglob("*") if x.is_file()
                      and not any(part.startswith(".") for part in x.relative_to(full).parts))
    return [full] if full.is_file() else []


def variable_values(agent: Agent, values: Mapping[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in agent.values_with_defaults(
        {k: str(v) for k, v in values.items()}).items()}
