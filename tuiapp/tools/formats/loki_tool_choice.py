"""Which Loki tools are on: `enabled_tools` and `mapping_tools` of Loki's global config.yaml.

Loki compiles only the files `visible_tools` lists. Outside an agent it offers those that
`enabled_tools` names: `all`, or a comma-separated list of tool names and `mapping_tools`
aliases (`fs: 'fs_cat,fs_ls'`, an alias standing for a comma-separated list of tool names);
names that are neither a visible tool nor an alias are skipped. An agent's `global_tools` name
tool files; Loki's docs say agents inherit the aliases too, so kep also takes an alias there.

Where kep differs, on purpose: Loki offers no tool while `enabled_tools` is unset (null) until
`.set enabled_tools` or a role names some. kep has neither, so unset means every visible tool
(kep's approval rules still decide each call). Loki roles (`roles/*.md`) are not read.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tuiapp.tools.formats.yaml_file import read_yaml


def _names(value: Any) -> list[str]:
    """A comma-separated string (Loki's form) or a YAML list, as trimmed names."""
    if isinstance(value, str):
        items: Iterable[Any] = value.split(",")
    elif isinstance(value, list):
        items = value
    else:
        return []
    return [s for s in (str(v).strip() for v in items if v is not None) if s]


def aliases(config_dir: Path) -> dict[str, list[str]]:
    """`mapping_tools`: alias → the tool names it stands for."""
    data = read_yaml(config_dir / "config.yaml").get("mapping_tools")
    if not isinstance(data, dict):
        return {}
    return {str(k).strip(): _names(v) for k, v in data.items()}


def expand(items: Iterable[str], table: dict[str, list[str]]) -> list[str]:
    out: list[str] = []
    for item in items:
        out += table.get(item, [item])
    return out


_seen: dict[Path, tuple[tuple[int, int], set[str] | None]] = {}


def enabled(config_dir: Path) -> set[str] | None:
    """The tool names `enabled_tools` turns on outside agents; None when every visible tool
    is on (`all`, or unset: see the module doc). Read once per version of the file: every
    tool file of the dir asks."""
    path = config_dir / "config.yaml"
    try:
        st = path.stat()
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        return None
    hit = _seen.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    result = _enabled(config_dir)
    _seen[path] = (stamp, result)
    return result


def _enabled(config_dir: Path) -> set[str] | None:
    value = read_yaml(config_dir / "config.yaml").get("enabled_tools")
    names = _names(value)
    if value is None or names == ["all"]:
        return None
    return set(expand(names, aliases(config_dir)))  # (an empty string turns every tool off)
