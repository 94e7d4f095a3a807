"""One module per on-disk tool format.

default_formats() is the list the registry and the runner use. Adding a format is one line in
FORMAT_CLASSES ("module:Class"); modules are imported only when default_formats() runs, and
must stay light at import time (the warm `kep functions` path imports every one of them).
"""

from __future__ import annotations

import importlib

from tuiapp.tools.formats.base import ToolFormat

# Priority order: on a duplicate tool name across formats, the earlier format wins.
FORMAT_CLASSES: tuple[str, ...] = (
    "tuiapp.tools.formats.keprompt:KepromptFormat",
    "tuiapp.tools.formats.llm_functions:LlmFunctionsFormat",
    "tuiapp.tools.formats.loki:LokiFormat",
    "tuiapp.tools.formats.extensions:ExtensionFormat",
    "tuiapp.tools.formats.aitool:AIToolFormat",
)


def default_formats() -> list[ToolFormat]:
    out: list[ToolFormat] = []
    for ref in FORMAT_CLASSES:
        module, _, cls = ref.partition(":")
        out.append(getattr(importlib.import_module(module), cls)())
    return out
