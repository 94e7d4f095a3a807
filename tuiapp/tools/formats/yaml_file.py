"""YAML config files of the Loki format, read as a mapping."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML mapping, or {} when the file is missing or unreadable (reported elsewhere)."""
    try:
        import yaml

        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except Exception:  # OSError, yaml.YAMLError, bad UTF-8: the agent loader names it
        return {}
    return data if isinstance(data, dict) else {}
