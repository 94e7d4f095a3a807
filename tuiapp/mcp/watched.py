"""A transport whose read stream reports its end: the server process exited."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio


@asynccontextmanager
async def watched(transport: Any, on_end: Callable[[], None]) -> AsyncIterator[Any]:
    """The transport, with a read stream that reports its end (the server process exited)."""
    async with transport as (read, write):
        yield _EndWatch(read, on_end), write


class _EndWatch:
    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner, self._on_end = inner, on_end

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _EndWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _EndWatch:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
