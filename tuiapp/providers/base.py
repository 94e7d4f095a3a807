"""The one small interface every wire protocol implements, plus the retry wrapper."""

from __future__ import annotations

import asyncio
import random
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from tuiapp.settings.config_types import ProviderConfig
from tuiapp.vocab.events import ReasoningDelta, Retrying, TextDelta, Usage
from tuiapp.vocab.messages import Message, Reasoning, ToolCall
from tuiapp.vocab.tool_specs import ToolSpec


@dataclass(frozen=True)
class StreamEnd:
    """Last item of a successful stream. stop_reason: "end_turn" | "tool_use" | "max_tokens" | …"""

    stop_reason: str


# What Provider.stream yields. Tool calls are yielded whole, once their arguments are complete;
# Reasoning (what the API needs back with this reply) once, before StreamEnd.
StreamItem = TextDelta | ReasoningDelta | Reasoning | ToolCall | Usage | StreamEnd


class ProviderFailure(Exception):
    """A provider error with a message fit for the user (never containing a key)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        from tuiapp.security.secrets import scrub_error

        message = scrub_error(message)  # whatever built it: no part of a known key gets out
        super().__init__(message)
        self.message = message
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


class Provider(ABC):
    """Streams one model response for a history. Implementations import their SDK lazily."""

    def __init__(self, config: ProviderConfig, model: str) -> None:
        self.config = config
        self.model = model
        # "off" | "low" | "medium" | "high", or None for the API's default; the palette sets it.
        self.reasoning: str | None = config.reasoning

    @property
    def label(self) -> str:
        return f"{self.config.name}/{self.model}" if self.model else self.config.name

    @property
    def origin(self) -> str:
        """Where reasoning comes from; only reasoning of the same origin is sent back."""
        return f"{self.config.api}|{self.config.name}|{self.model}"

    def cost(self, usage: Usage) -> float | None:
        """The price of one request's tokens, when prices are configured for this model."""
        prices = self.config.prices_for(self.model)
        if not prices:
            return None
        cached = min(usage.cached_tokens, usage.input_tokens)
        total = ((usage.input_tokens - cached) * prices["input"]
                 + cached * prices.get("cached_input", prices["input"])
                 + usage.output_tokens * prices["output"])
        return total / 1_000_000

    @abstractmethod
    def stream(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], system: str | None
    ) -> AsyncIterator[StreamItem]:
        """Yield TextDelta, whole ToolCalls, Usage, then one StreamEnd.

        Raise ProviderFailure on any error (retryable=True for 429/5xx/connection errors).
        """

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release network clients."""


async def stream_with_retries(
    provider: Provider,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    system: str | None,
    *,
    attempts: int = 3,
    base_delay: float = 1.0,
    max_delay: float = 20.0,
) -> AsyncIterator[StreamItem | Retrying]:
    """Retry retryable failures, but only while nothing has been yielded yet.

    Once output has reached the caller, a failure propagates: the caller keeps the partial
    reply (marked interrupted) rather than silently duplicating text.
    """
    for attempt in range(1, attempts + 1):
        started = False
        try:
            async for item in provider.stream(messages, tools, system):
                started = True
                yield item
            return
        except ProviderFailure as e:
            if started or not e.retryable or attempt == attempts:
                raise
            if e.retry_after is not None:
                delay = min(max_delay, e.retry_after)
            else:  # exponential backoff with jitter
                delay = min(max_delay, base_delay * 2 ** (attempt - 1)) * random.uniform(0.8, 1.2)
            yield Retrying(attempt=attempt, delay=round(delay, 2), reason=e.message)
            await asyncio.sleep(delay)


def mask_secret(text: str, secret: str | None) -> str:
    """Remove every key from an error text: APIs echo a prefix of it, and an HTTP library
    quotes a whole header it refused (secrets.scrub_error)."""
    from tuiapp.security import secrets

    return secrets.scrub_error(text, extra=(secret, secret.strip() if secret else None))
