"""FrozenRecord: __eq__, __hash__ and __repr__ for frozen dataclasses, written once.

kep's startup imports many frozen dataclasses (events, settings), and `@dataclass` compiles
each generated method with exec: six per frozen class. Declared `@dataclass(frozen=True,
eq=False, repr=False)` on top of FrozenRecord, a class gets three; these three give the same
results as the generated ones (same fields, same order, same class check).
"""

from __future__ import annotations

import dataclasses
import reprlib
from typing import Any


class FrozenRecord:
    __slots__ = ()

    def _compared(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f.name) for f in dataclasses.fields(self)  # type: ignore[arg-type]
                     if f.compare)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._compared() == other._compared()  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, f.name) for f in dataclasses.fields(self)  # type: ignore[arg-type]
                          if (f.compare if f.hash is None else f.hash)))

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}"
                          for f in dataclasses.fields(self) if f.repr)  # type: ignore[arg-type]
        return f"{self.__class__.__qualname__}({shown})"
