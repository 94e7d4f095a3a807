"""What a project brings, counted where the tool formats are known (this floor sits above
the adapters) and handed to folder trust (tuiapp.security.trust) as data: listing files,
running nothing."""

from __future__ import annotations

import os
from pathlib import Path

from tuiapp.security import project_items, trust
from tuiapp.security.trust_items import (
    KEP_TOML,
    Inventory,
    Question,
    items_of,
    one_line,
    read_project_files,
    table_at,
)
from tuiapp.settings import config as config_mod
from tuiapp.settings import config_types, paths
from tuiapp.settings.config_types import Config
from tuiapp.tools.formats import default_formats
from tuiapp.tools.formats.base import FormatContext

EXECUTABLE_FORMATS = ("keprompt", "llm-functions", "loki")


def inventory(root: Path) -> Inventory:
    """Count the project's tool files per kind by the formats' own file rules (their roots and
    candidates, which only list directories), its MCP servers and its self-acting entries."""
    toml, mcp = read_project_files(root)
    try:
        cfg = config_mod.parse(toml, root / KEP_TOML, root)
    except config_types.ConfigError:
        cfg = config_types.Config(project_root=root)
    ctx = FormatContext(root, cfg, None, {})  # type: ignore[arg-type]  # no lister: nothing runs
    builtin = os.path.realpath(paths.builtin_functions_dir())
    executables = packs = 0
    seen: set[str] = set()
    for fmt in default_formats():
        for tool_root in fmt.roots(ctx):
            if os.path.realpath(tool_root) == builtin:
                continue  # kep's own built-ins (kep's checkout is a project too)
            try:
                candidates = list(fmt.candidates(tool_root))
            except OSError:
                continue
            for path in candidates:
                real = os.path.realpath(path)
                if real in seen:
                    continue
                seen.add(real)
                if fmt.name in EXECUTABLE_FORMATS:
                    executables += 1
                else:
                    packs += 1
    servers = [*table_at(toml, "mcp", "servers"), *table_at(mcp, "mcpServers")]
    labels = list(items_of(toml, {}).values())
    return Inventory(
        executables=executables,
        packs=packs,
        servers=tuple(dict.fromkeys(one_line(s) for s in servers)),
        allow_rules=tuple(label for label in labels if label.startswith(("allow", "approval"))),
        providers=tuple(label for label in labels if label.startswith("provider")),
        env_file=(root / ".env").is_file(),
        settings_file=(root / KEP_TOML).is_file(),
        others=(*(label for label in labels if label.startswith("[")),
                *project_items.env_items(root).values(), *project_items.git_items(root).values()),
        runtimes=tuple(project_items.runtime_items(root).values()),
    )


def question(config: Config) -> Question | None:
    """Whether to ask the user about this project, and with what. Lists files, runs nothing."""
    state = trust.state_of(config)
    if state.trusted and not state.gained:
        return None
    return trust.question(state, inventory(Path(state.root)))
