"""kep's documentation: one Markdown page per topic, shipped with the package (so it is the same
text on the forge, in `kep help TOPIC` and in the help screen, F1). The README is the front
page and links here."""

from __future__ import annotations

from pathlib import Path

DOCS_DIR = Path(__file__).parent

# (topic, what it covers), in reading order.
TOPICS: tuple[tuple[str, str], ...] = (
    ("overview", "what kep is, set-up, screenshots"),
    ("commands", "every command and flag, kep run, the offline model"),
    ("chat", "the chat screen: transcript, approval panel, tool panes, functions panel"),
    ("keys", "every key and every command palette entry"),
    ("themes", "the shipped themes and writing your own"),
    ("models", "providers, [providers.NAME], reasoning models, stops, errors and retries"),
    ("tools", "the tool format, built-in functions, kep new / call / init, [tools] settings"),
    ("approval", "approval rules: allow, ask, deny by tool and arguments"),
    ("trust", "folder trust: what an untrusted project cannot do"),
    ("formats", "tools written for llm-functions/AIChat, Loki, extension packs, AITool"),
    ("mcp", "using MCP servers, and serving kep's tools over MCP"),
    ("workbench", "writing tools in kep: templates, the form, runs, the protocol check"),
    ("hot-reload", "what reloads when you save, and kep functions --watch"),
    ("prompts", ".prompt files and llm-functions agents"),
    ("sessions", "the session store, resuming, forking, pruning"),
    ("security", "the security model in one place"),
    ("config", "every setting of config.toml and kep.toml, environment variables"),
    ("development", "tests, the hermetic suite, peers, benchmarks, layout"),
    ("how-kep-is-built", "the layers, one turn, where to add a provider, a format, a screen"),
)


def path(topic: str) -> Path | None:
    """The page of `topic` (a name from TOPICS), None when there is no such topic."""
    names = dict(TOPICS)
    return DOCS_DIR / f"{topic}.md" if topic in names else None


def title(topic: str) -> str:
    """The page's first heading."""
    page = path(topic)
    first = page.read_text(encoding="utf-8").split("\n", 1)[0] if page else ""
    return first.lstrip("# ").strip() or topic


def search(words: str) -> list[tuple[str, str]]:
    """Topics whose text holds every word (case-insensitive), each with its first matching
    line: (topic, line)."""
    terms = words.lower().split()
    found = []
    for topic, _ in TOPICS:
        page = path(topic)
        text = page.read_text(encoding="utf-8") if page else ""
        if terms and all(t in text.lower() for t in terms):
            line = next((ln.strip() for ln in text.splitlines() if terms[0] in ln.lower()), "")
            found.append((topic, line))
    return found
