"""The core must be importable without Textual (and without the provider SDKs)."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import importlib, pkgutil, sys
import tuiapp.conversation, tuiapp.mcp, tuiapp.project, tuiapp.providers, tuiapp.security
import tuiapp.settings, tuiapp.tools, tuiapp.vocab
for pkg in (tuiapp.vocab, tuiapp.settings, tuiapp.security, tuiapp.tools, tuiapp.providers,
            tuiapp.mcp, tuiapp.conversation, tuiapp.project):
    for mod in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        if mod.name.rsplit(".", 1)[-1].startswith("_child"):
            continue  # child-process entry points run on their own
        importlib.import_module(mod.name)
heavy = [m for m in ("textual", "openai", "anthropic") if m in sys.modules]
print(",".join(heavy))
"""


def test_core_providers_tools_import_without_textual() -> None:
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True)
    loaded = out.stdout.strip().split(",") if out.stdout.strip() else []
    assert "textual" not in loaded, f"textual imported by the core: {loaded}"


def test_provider_sdks_are_imported_lazily() -> None:
    code = (
        "import sys, tuiapp.providers, tuiapp.conversation.conversation, tuiapp.project.workspace;"
        "print([m for m in ('openai', 'anthropic', 'textual') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
