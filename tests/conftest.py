"""Shared fixtures: every test gets its own config/data/cache dirs and no API keys."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # so tests can `from fakes.llm_server import …`

KEY_VARS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "LLM_MCP_SKIP_CONFIRM",
    "LLM_MCP_NEED_CONFIRM",
)


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    home = tmp_path_factory.mktemp("kephome")
    for name, sub in (
        ("KEP_CONFIG_DIR", "config"),
        ("KEP_DATA_DIR", "data"),
        ("KEP_CACHE_DIR", "cache"),
    ):
        monkeypatch.setenv(name, str(home / sub))
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project: a directory with prompts/functions/ (so it is its own root)."""
    root = tmp_path / "proj"
    (root / "prompts" / "functions").mkdir(parents=True)
    return root


def write_tool(path: Path, text: str) -> Path:
    """Write an executable file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


KEP = [sys.executable, "-m", "tuiapp"]


def kep_env(**extra: str) -> dict[str, str]:
    """The environment a `kep` subprocess should get in a test (isolated dirs are inherited)."""
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
    env.update(extra)
    return env
