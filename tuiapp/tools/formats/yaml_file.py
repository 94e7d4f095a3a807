"""YAML config files of the Loki format, read as a mapping."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tuiapp.security import project_files


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML mapping, or {} when the file is missing or unreadable (the agent loader names it):
    read through the one reader, so a /dev/zero link or deep nesting costs nothing."""
    try:
        data = project_files.read_yaml(path)
    except project_files.ProjectFileError:
        return {}
    return data if isinstance(data, dict) else {}
