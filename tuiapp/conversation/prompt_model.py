"""A parsed `.prompt` file as data: its statements, its metadata, and the error that names a
file, a line and a statement. Parsing lives in prompt_file, variables in prompt_variables."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class PromptError(Exception):
    """A problem in a `.prompt` file, naming the file, the line and the statement."""

    def __init__(self, file: Path | str, line: int, statement: str, message: str) -> None:
        self.file, self.line, self.statement, self.message = str(file), line, statement, message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        shown = self.statement if len(self.statement) <= 120 else self.statement[:117] + "..."
        return f"{where}: {self.message}" + (f"\n    {shown}" if shown else "")


class PromptNotFound(LookupError):
    pass


@dataclass(frozen=True)
class Statement:
    keyword: str  # ".user", ".text", …
    value: str
    line: int  # 1-based line of the keyword
    source: str  # the first source line, for messages


@dataclass(frozen=True)
class Variable:
    name: str
    default: Any = None  # from `.prompt {"params": …}`
    has_default: bool = False
    line: int = 0  # first use


@dataclass
class PromptFile:
    path: Path
    statements: list[Statement]
    meta: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    display_path: str = ""

    @property
    def name(self) -> str:
        return str(self.meta.get("name") or self.path.stem)

    @property
    def params(self) -> dict[str, Any]:
        params = self.meta.get("params")
        return dict(params) if isinstance(params, dict) else {}

    def error(self, stmt: Statement | None, message: str) -> PromptError:
        if stmt is None:
            return PromptError(self.display_path or self.path, 0, "", message)
        return PromptError(self.display_path or self.path, stmt.line, stmt.source, message)
