"""[providers.NAME] settings that can also be given per model, in [providers.NAME.models."M"]:
prices, and the model options (temperature, max output tokens, reasoning effort, context
window). One pass over `models`, so every key read there is known (unknown keys warn)."""

from __future__ import annotations

from tuiapp.settings.config_reader import TableReader
from tuiapp.settings.config_types import ModelOptions

REASONING_LEVELS = ("off", "low", "medium", "high")
PRICE_KEYS = ("input", "output", "cached_input")
MAX_WINDOW = 100_000_000  # tokens: anything larger is a typo


def _price_table(r: TableReader, key: str) -> dict[str, float] | None:
    """[….prices] input / output (required) and cached_input: per million tokens."""
    if key not in r.table:
        return None
    pr = r.sub(key)
    table = {}
    for k in pr.table:
        if k not in PRICE_KEYS:
            raise pr.error(k, f"unknown price; use {', '.join(PRICE_KEYS)} (per million tokens)")
        v = pr.get(k, float)
        if v < 0:
            raise pr.error(k, "a price cannot be negative")
        table[k] = v
    for k in ("input", "output"):
        if k not in table:
            raise pr.error(k, "required (price per million tokens)")
    return table


def _count(r: TableReader, key: str, most: int) -> int | None:
    v = r.get(key, int, None)
    if v is not None and not 1 <= v <= most:
        raise r.error(key, f"must be between 1 and {most:,}; got {v}")
    return v


def options(r: TableReader, reasoning: str | None = None) -> ModelOptions:
    """The model options of one table; `reasoning` is the value inherited when unset."""
    temperature = r.get("temperature", float, None)
    if temperature is not None and not 0 <= temperature <= 2:
        raise r.error("temperature", f"must be between 0 and 2; got {temperature}")
    return ModelOptions(
        temperature=temperature,
        max_output_tokens=_count(r, "max_output_tokens", 10_000_000),
        reasoning=r.choice("reasoning", REASONING_LEVELS, reasoning),
        context_window=_count(r, "context_window", MAX_WINDOW),
    )


def per_model(pr: TableReader) -> tuple[dict[str, dict[str, float]], dict[str, ModelOptions]]:
    """(prices, options) of [providers.X.models."M"] for each M, "" for the provider's own
    `prices`; options of models that set none are left out."""
    prices: dict[str, dict[str, float]] = {}
    if (table := _price_table(pr, "prices")) is not None:
        prices[""] = table
    opts: dict[str, ModelOptions] = {}
    models = pr.sub("models")
    for model in models.table:
        mr = models.sub(model)
        if (table := _price_table(mr, "prices")) is not None:
            prices[model] = table
        if (o := options(mr)) != ModelOptions():
            opts[model] = o
    return prices, opts
