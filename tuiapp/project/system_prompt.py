"""The system prompt the model gets, in one place (`kep run --show-system` prints it).

Sections, in order, separated by a blank line:
  1. the base prompt (kep's own, with the date, the OS, the project root, whether it is a git
     repository and kep's tool conventions; or `system_prompt` from the config);
  1b. the project's instructions (AGENTS.md, KEP.md or CLAUDE.md; project.instructions);
  2. the active `.prompt` file's `.system` text, or the agent's instructions (+ documents);
  3. the SYSTEM_PROMPT of every extension pack with a tool the session can use;
  4. get_ai_prompt_instructions() of every AITool class the session can use.
No textual here.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Iterable
from pathlib import Path

from tuiapp.vocab.tool_specs import ToolSpec

BASE_PROMPT = (
    "You are kep, an assistant in a terminal chat with function calling. Use the tools when "
    "they help; tool results come from real programs run in the user's project. Be concise."
)


def pack_sections(tools: Iterable[ToolSpec]) -> list[str]:
    """One section per extension pack (by source file), in the registry's order."""
    seen: dict[str, str] = {}
    for spec in tools:
        if spec.format != "extension" or spec.source in seen:
            continue
        text = str(spec.run.get("system_prompt") or "").strip()
        if text:
            seen[spec.source] = f"## {spec.run.get('pack') or spec.source}\n\n{text}"
    return list(seen.values())


def aitool_sections(tools: Iterable[ToolSpec]) -> list[str]:
    """One section per AITool with instructions; identical texts appear once."""
    out: list[str] = []
    texts: set[str] = set()
    for spec in tools:
        if spec.format != "aitool":
            continue
        text = str(spec.run.get("system_prompt") or "").strip()
        if text and text not in texts:
            texts.add(text)
            out.append(f"## {spec.name}\n\n{text}")
    return out


def compose(base: str, session: str, tools: Iterable[ToolSpec], project: str = "") -> str:
    tools = list(tools)
    parts = [base, project, session, *pack_sections(tools), *aitool_sections(tools)]
    return "\n\n".join(p.strip() for p in parts if p and p.strip())


# kep's tool conventions, as the model needs them (a few lines: every request carries them).
CONVENTIONS = (
    "Tools run as real programs with the project root as their working directory, without a "
    "terminal and with a timeout; give paths relative to the project root. A call may wait "
    "for the user's approval; a denied or failed call comes back as an error result: read it "
    "and adapt rather than repeating the same call."
)


def environment(root: Path, today: str | None = None) -> str:
    from tuiapp.project.instructions import repository_root

    system = {"Darwin": "macOS"}.get(platform.system(), platform.system() or "unknown")
    git = repository_root(root)
    where = ("not in a git repository" if git is None else
             "a git repository" if git == root else f"inside the git repository at {git}")
    return (f"Today is {today or time.strftime('%Y-%m-%d')}. The user's OS is {system}. "
            f"The project root is {root} ({where}).\n{CONVENTIONS}")


def base_prompt(root: Path) -> str:
    """kep's own base prompt for a project (`system_prompt` in the config replaces it)."""
    return f"{BASE_PROMPT}\n\n{environment(root)}"
