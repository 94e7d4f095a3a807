"""The sandbox's one small interface: a resolved Profile, and a Mechanism that wraps a command
so the kernel enforces that profile. One module per mechanism (bubblewrap.py, none.py; a
Seatbelt module for macOS would be a third) behind this interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# What a child may reach on the network: "off" (nothing), "on" (anything, through kep's
# proxy), "ask" (hosts a rule allows; the others are asked for), or a tuple of hosts.
Network = str | tuple[str, ...]


@dataclass(frozen=True)
class Profile:
    """What one child may see and touch, with every path absolute."""

    root: Path  # the project root: writable
    readonly: tuple[Path, ...] = ()  # inside root, kept read-only (.git, kep.toml, tool folders)
    hidden: tuple[Path, ...] = ()  # replaced by an empty folder or an empty file
    writable: tuple[Path, ...] = ()  # more writable paths (config, or one call's output file)
    # Tool folders configured outside the root: read-only, and shown even where the sandbox
    # has its own (a tool source under /tmp).
    visible: tuple[Path, ...] = ()
    network: Network = "off"
    cache: Path | None = None  # a private writable folder for runtimes' caches (npm, pip, …)
    call_files: tuple[Path, ...] = ()  # files kep made for this one call ($LLM_OUTPUT)
    # kep's own files shown read-only through its hidden folders: the trust records, to MCP
    # servers (a `kep mcp serve` one decides with them; they hold no key).
    kep_files: tuple[Path, ...] = ()
    # The shared network namespace to join (its holder's pid) and this call's proxy URL;
    # None: a namespace of its own with nothing in it but loopback.
    proxy: tuple[int, str] | None = None
    hidden_sockets: tuple[Path, ...] = (Path("/run"), Path("/var/run"))  # host services
    enabled: bool = True
    required: bool = False
    notes: tuple[str, ...] = field(default=(), compare=False)

    def summary(self) -> str:
        """One line: what a run may touch (`kep sandbox -- CMD`)."""
        writable = ", ".join(str(p) for p in (self.root, *self.writable))
        net = self.network if isinstance(self.network, str) else ", ".join(self.network)
        return (f"writable: {writable}, a private /tmp; {len(self.hidden)} paths hidden; "
                f"network: {net}")

    def describe(self) -> list[str]:
        """The profile as lines of text (`kep sandbox --explain`)."""
        net = self.network if isinstance(self.network, str) else ", ".join(self.network)
        lines = ["readable: the whole filesystem except what is hidden",
                 f"writable: {self.root} (the project root)", "writable: a private /tmp"]
        lines += [f"writable: {p}" for p in self.writable]
        if self.cache is not None:
            lines.append(f"writable: {self.cache} (private caches: npm, pip, uv, XDG)")
        lines += [f"read-only inside the root: {p}" for p in self.readonly]
        lines += [f"hidden: {p}" for p in self.hidden]
        lines += [f"hidden (host service sockets): {p}" for p in self.hidden_sockets]
        if self.network == "on":
            lines.append("network: on (every host through kep's proxy, HTTP and HTTPS CONNECT, "
                         "without asking; each host reached is logged; direct sockets, UDP "
                         "and DNS are refused)")
        elif self.network == "off":
            lines.append("network: off (every socket to anything outside is refused)")
        else:
            lines.append(f"network: {net} (only through kep's proxy: HTTP and HTTPS CONNECT; "
                         "other hosts are asked about; direct sockets are refused)")
        lines.append("processes: a PID namespace of its own; everything in it ends with the call")
        return lines


@dataclass(frozen=True)
class Resident:
    """The same walls held by a resident starter (starters.py) that can start the call itself:
    `walls` is the mechanism's command for a starter, to which its program is appended."""

    key: object  # the walls' identity: calls with equal keys share a starter
    walls: list[str]
    argv: list[str]  # the call's own command


@dataclass(frozen=True)
class Wrapped:
    """The command to start instead of the original, and its environment."""

    argv: list[str]
    env: dict[str, str] | None
    resident: Resident | None = None  # where a starter may start it instead


class Mechanism(ABC):
    name: str = "?"
    how: str = ""  # how calls are started behind its walls (`kep sandbox --explain`)

    @abstractmethod
    def missing(self) -> str | None:
        """None when this mechanism works here, else the missing piece, in one line."""

    @abstractmethod
    def wrap(self, profile: Profile, argv: Sequence[str], env: Mapping[str, str] | None,
             cwd: Path | None) -> Wrapped:
        """`argv` run under `profile`."""

    def holder_argv(self, argv: Sequence[str], sock_dir: str) -> list[str] | None:
        """`argv` (the bridge) in a network namespace of its own that calls can join; None
        where the mechanism has none."""
        return None

    def probe_argv(self) -> list[str] | None:
        """A command that exits 0 only when the mechanism really works here (run once)."""
        return None
