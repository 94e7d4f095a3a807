"""The system prompt the model gets, in one place (`kep run --show-system` prints it).

Sections, in order, separated by a blank line:
  1. the base prompt (kep's own, or `system_prompt` from the config);
  2. the active `.prompt` file's `.system` text, or the agent's instructions (+ documents);
  3. the SYSTEM_PROMPT of every extension pack with a tool the session can use;
  4. get_ai_prompt_instructions() of every AITool class the session can use.
No textual here.
"""

from __future__ import annotations

from collections.abc import Iterable

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


def compose(base: str, session: str, tools: Iterable[ToolSpec]) -> str:
    tools = list(tools)
    parts = [base, session, *pack_sections(tools), *aitool_sections(tools)]
    return "\n\n".join(p.strip() for p in parts if p and p.strip())
