"""The settings in force for one project: the user's config, plus as much of the project's
kep.toml as folder trust allows, and the project's `.env`.

Settings read files (tuiapp.settings); security decides trust (tuiapp.security.trust); this
module, one floor up, puts the two together."""

from __future__ import annotations

import os
from pathlib import Path

from tuiapp.security import project_items, secrets, trust
from tuiapp.settings import config as settings_config
from tuiapp.settings import paths
from tuiapp.settings.config_types import Config
from tuiapp.vocab.trust_state import TrustState


def load(project_root: Path | None = None, user_file: Path | None = None,
         trust_state: TrustState | None = None) -> Config:
    """Load user + project config. Raises ConfigError naming the file and key.

    The project's kep.toml counts only when folder trust says so, and then without the
    entries it gained since it was trusted."""
    root = (project_root or paths.find_project_root()).resolve()
    state = trust_state or trust.check(root)
    accepted = state.accepted

    def in_force(data: dict) -> dict:
        return trust.withhold(data, accepted)

    cfg = settings_config.load(root, user_file or paths.user_config_file(),
                               in_force if state.trusted else None)
    return Config(**{**cfg.__dict__, "trust": state})


def load_dotenv(root: Path, state: TrustState | None = None) -> list[str]:
    """Load <root>/.env into os.environ without overriding variables already set, for a
    trusted project. A variable that changes kep's own behaviour (KEP_CONFIG_DIR,
    LLM_MCP_SKIP_CONFIRM, a proxy, …) is loaded only when the user trusted it as it is now:
    the names held back are returned. Raises ConfigError when the file is unreadable or not
    UTF-8 (nothing is loaded then)."""
    state = state or trust.check(root)
    if not state.trusted:
        return []
    values = settings_config.read_dotenv(root)
    secrets.note_dotenv(values)  # kept from tools and redacted from their output
    held = []
    for k, v in values.items():
        if v is None or k in os.environ:
            continue
        if project_items.is_behaviour_variable(k) and \
                not state.allows(project_items.env_item(k, v)[0]):
            held.append(k)
            continue
        os.environ[k] = v
    return held
