"""One module per wire protocol behind providers.base.Provider. SDKs are imported lazily."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tuiapp.providers.base import Provider
    from tuiapp.settings.config_types import Config, ProviderConfig

# api → (module, class); a module is imported only when a model of that kind is chosen.
_IMPLEMENTATIONS = {
    "offline": ("tuiapp.providers.offline", "OfflineProvider"),
    "responses": ("tuiapp.providers.openai_responses", "ResponsesProvider"),
    "chat": ("tuiapp.providers.openai_chat", "ChatProvider"),
    "anthropic": ("tuiapp.providers.anthropic", "AnthropicProvider"),
}


class ModelError(ValueError):
    """A model name kep cannot use (unknown provider, missing key). Message is for the user."""


def split_model(name: str) -> tuple[str, str]:
    provider, _, model = name.strip().partition("/")
    return provider, model


def make_provider(config: Config, name: str) -> Provider:
    pc, model = resolve_model(config, name)
    module, cls = _IMPLEMENTATIONS[pc.api]
    return getattr(import_module(module), cls)(pc, model)


def resolve_model(config: Config, name: str) -> tuple[ProviderConfig, str]:
    """Check a model name without importing any SDK (the TUI validates before its first frame
    and builds the provider later). Raises ModelError with a message for the user."""
    provider_name, model = split_model(name)
    pc = config.providers.get(provider_name)
    if pc is None:
        known = ", ".join(sorted(config.providers))
        raise ModelError(f"unknown provider {provider_name!r} in model {name!r}; known: {known} "
                         "(declare others as [providers.NAME] in kep.toml)")
    if pc.api != "offline":
        model = model or (pc.default_model or "")
        if not model:
            raise ModelError(f"model {name!r} names no model: use {provider_name}/MODEL")
        if pc.api_key_env and not pc.api_key():
            raise ModelError(f"{pc.api_key_env} is not set (needed for {provider_name}/…); "
                             "export it or put it in the project's .env")
    return pc, model
