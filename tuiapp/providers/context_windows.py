"""How many tokens a model's context holds: `context_window` from the config (provider or
model), else a table of common models, else unknown. No tokenizer: the footer compares this
with the input tokens the provider itself reported for the last request."""

from __future__ import annotations

import re

from tuiapp.settings.config_types import ProviderConfig

# First match wins: the more specific names come first. Matched against the model's last
# path segment (OpenRouter's `openai/gpt-4o`, Bedrock's `openai.gpt-5.5`), lower case, without
# an Ollama `:tag`.
KNOWN: tuple[tuple[str, int], ...] = (
    (r"gpt-5(\.\d+)?-chat", 128_000),
    (r"gpt-[5-9]", 400_000),
    (r"gpt-4\.1", 1_047_576),
    (r"gpt-4o|gpt-4-turbo|chatgpt-4o", 128_000),
    (r"gpt-4(-\d|$)", 8_192),
    (r"gpt-3\.5", 16_385),
    (r"gpt-oss", 131_072),
    (r"^o\d", 200_000),
    (r"claude-(sonnet|opus)-[4-9]|claude-[4-9]", 200_000),
    (r"claude", 200_000),
    (r"gemini-(1\.5|2|3)", 1_048_576),
    (r"deepseek", 128_000),
    (r"codestral", 256_000),
    (r"mistral-(large|medium|small)|magistral|ministral|devstral", 128_000),
    (r"kimi-k2", 131_072),
    (r"grok-[34]", 256_000),
    (r"llama-?3\.[1-3]|llama-?4", 131_072),
    (r"qwen3|qwen2\.5|qwq", 32_768),
)
_COMPILED = tuple((re.compile(p), n) for p, n in KNOWN)


def _bare(model: str) -> str:
    name = model.lower().rsplit("/", 1)[-1].split(":", 1)[0]
    return name.split(".", 1)[1] if re.match(r"[a-z]+\.[a-z]", name) else name  # openai.gpt-5


def known_window(model: str) -> int | None:
    name = _bare(model)
    for rx, tokens in _COMPILED:
        if rx.search(name):
            return tokens
    return None


def context_window(config: ProviderConfig, model: str) -> int | None:
    """The configured window, else the known one, else None."""
    return config.options_for(model).context_window or known_window(model)
