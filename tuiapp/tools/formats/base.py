"""The small interface every on-disk tool format implements.

A format finds candidate files under its roots, derives ToolSpecs from one file (raising
ToolLoadError with a one-line reason when it can't), and builds the subprocess Invocation for
one call. The registry caches declare() results per (path, size, mtime_ns, cache_salt) and the
common Runner executes every Invocation, so each format gets caching, hot reload, timeouts,
cancel, streaming and no-TTY for free.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from tuiapp.settings.config_types import Config
from tuiapp.vocab.tool_specs import Invocation, ToolSpec


class ToolLoadError(Exception):
    """A file that cannot provide tools. The message is one line and says what to fix.

    transient: the failure may go away without the file changing (a timeout, fork failing);
    the registry then does not cache it and tries again on the next refresh."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


@dataclass(frozen=True)
class ProcResult:
    exit_code: int | None  # None: killed on timeout
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    stdout_truncated: bool = False  # more stdout than the collector keeps


# Runs argv in its own process group with stdin closed and no TTY, kills the whole group on
# timeout (tools.proc.run_collect implements it).
Lister = Callable[..., Awaitable[ProcResult]]


@dataclass(frozen=True)
class FormatContext:
    project_root: Path
    config: Config
    lister: Lister
    env: Mapping[str, str] = field(default_factory=dict)


class ToolFormat(ABC):
    name: ClassVar[str]  # one of model.FORMATS

    @abstractmethod
    def roots(self, ctx: FormatContext) -> list[Path]:
        """Directories (or files) this format reads in this project; watched for changes."""

    @abstractmethod
    def candidates(self, root: Path) -> Iterable[Path]:
        """Files under `root` that may declare tools, in a stable (sorted) order."""

    @abstractmethod
    async def declare(self, path: Path, ctx: FormatContext) -> list[ToolSpec]:
        """The tools one file declares. Raise ToolLoadError (one line) when it is broken."""

    @abstractmethod
    def invocation(
        self, spec: ToolSpec, arguments: dict[str, Any], ctx: FormatContext
    ) -> Invocation:
        """The subprocess that runs one call."""

    def stat_candidates(self, root: Path) -> Iterable[tuple[Path, os.stat_result]]:
        """candidates() with each one's stat (a vanished one left out). A format that stats
        its candidates anyway returns those: the warm listing is mostly stat calls."""
        for path in self.candidates(root):
            try:
                yield path, path.stat()
            except OSError:
                continue

    def watch_recursive(self, root: Path) -> bool:
        """Whether hot reload must watch below `root`'s own entries. Formats whose candidates
        are the root's direct children say False: a flat watch of a big tree is cheap."""
        return True

    def cache_salt(self, path: Path, ctx: FormatContext) -> str:
        """Extra cache-key text for declarations that depend on more than the file itself
        (e.g. functions.json's bin/ dir, required env vars). Empty: the file alone decides."""
        return ""

    def result_text(self, spec: ToolSpec, stdout: str, output_file_text: str | None) -> str:
        """What the model gets from a successful run. Default: stdout."""
        return stdout
