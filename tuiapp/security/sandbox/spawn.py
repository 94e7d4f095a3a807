"""The one place kep starts a process. Every child (tool calls, listers, the fork server, MCP
stdio servers, `.prompt` `.cmd` calls, workbench runs) is started here, wrapped by the sandbox
mechanism with its resolved profile. Three children are started unconfined, on purpose and by
name: kep's own watchdog (it must see and kill what kep started), the user's editor (the
user's own action on a tool's source) and the browser (the user's own key on a URL an MCP
server asked them to visit). tests/unit/test_one_spawner.py fails if any other module does.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tuiapp.security.sandbox import exec_check, probe_memo, starters, walls
from tuiapp.security.sandbox import profile as profiles
from tuiapp.security.sandbox import writable as writable_check
from tuiapp.security.sandbox.base import Mechanism, Profile, Wrapped
from tuiapp.security.sandbox.bubblewrap import Bubblewrap
from tuiapp.security.sandbox.dotenv_index import DotenvIndex
from tuiapp.security.sandbox.none import NoSandbox
from tuiapp.security.subpath import under
from tuiapp.settings.config_types import Config, SandboxConfig

Kind = Literal["tool", "lister", "forkserver", "mcp", "helper"]
Unconfined = Literal["watchdog", "editor", "browser"]


class SandboxRequired(OSError):
    """`[sandbox] required = true` and the walls cannot be built here: nothing is started."""


@dataclass
class _State:
    settings: SandboxConfig
    root: Path | None = None
    tool_dirs: tuple[str, ...] = ()
    dotenvs: DotenvIndex | None = None
    refused: set[Path] = dataclasses.field(default_factory=set)  # said once each
    mechanism: Mechanism | None = None
    warned: bool = False
    asker: Any = None
    proxy: Any = None  # proxy.Proxy once the network namespace is up
    proxy_loop: Any = None
    holder: subprocess.Popen[bytes] | None = None
    holder_pid: int = 0
    port: int = 0
    net_failed: str | None = None  # why the shared network could not be set up
    net_lock: tuple[Any, asyncio.Lock] | None = None  # (its loop, the lock)
    profiles: dict[tuple[Any, ...], Profile] = dataclasses.field(default_factory=dict)


_state = _State(SandboxConfig())
_probe_lock = threading.Lock()
# Where the one-line notices go (the CLI prints them; tests collect them).
notice: Callable[[str], None] = lambda line: print(f"kep: {line}", file=sys.stderr)  # noqa: E731


def configure(settings: SandboxConfig, root: Path | None, tool_dirs: Sequence[str] = ()) -> None:
    """The opened project's `[sandbox]` (already trust-gated) and root."""
    _state.settings = settings
    _state.root = Path(os.path.realpath(root)) if root is not None else None
    _state.tool_dirs = tuple(tool_dirs)
    _state.dotenvs = None  # searched again on next use
    _state.profiles.clear()
    _state.refused.clear()
    profiles.forget()  # and the hidden list resolved again


def use_config(config: Config) -> None:
    """configure() from a loaded Config (the registry and the runner call it)."""
    dirs = (*config.tools.dirs, *(src.path for src in config.tools.sources))
    if (_state.settings is config.sandbox and _state.root is not None
            and _state.root == Path(os.path.realpath(config.project_root))
            and _state.tool_dirs == dirs):
        return  # unchanged: keep the `.env` search done already
    configure(config.sandbox, config.project_root, dirs)


def settings() -> SandboxConfig:
    return _state.settings


def mechanism() -> Mechanism:
    """The mechanism in use, probed once per process."""
    if _state.mechanism is not None:
        return _state.mechanism
    # Listers and calls starting together each asked from a thread of their own: a probe
    # (a whole bwrap run) each, six at the start of a listing of 20 shell tools.
    with _probe_lock:
        if _state.mechanism is None:
            _state.mechanism = _find_mechanism()
        return _state.mechanism


def _find_mechanism() -> Mechanism:
    if os.environ.get("KEP_SANDBOX_MECHANISM") == "none":  # tests of the fallback
        mech: Mechanism = NoSandbox("turned off for this process (KEP_SANDBOX_MECHANISM=none)")
    elif not sys.platform.startswith("linux"):
        mech = NoSandbox(f"no sandbox mechanism for {sys.platform} yet")
    else:
        bw = Bubblewrap()
        why = bw.missing() or _probe(bw)
        mech = NoSandbox(why) if why else bw
    return mech


def _probe(mech: Mechanism) -> str | None:
    argv = mech.probe_argv()  # (a pass is remembered: probe_memo.py)
    if not argv or probe_memo.passed(memo := probe_memo.key(argv)):
        return None
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{mech.name} cannot run here: {e}"
    if done.returncode == 0:
        probe_memo.remember(memo)
        return None
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    return (f"{mech.name} cannot make its namespaces here (are unprivileged user namespaces "
            f"turned off?): {lines[-1] if lines else f'exit {done.returncode}'}")


def status_line() -> str | None:
    """One line when tools run without walls (said once, at start), else None."""
    if not _state.settings.enabled:
        return "sandbox: off ([sandbox] enabled = false): tools run without the kernel walls"
    why = mechanism().missing()
    if why is None:
        return None
    if _state.settings.required:
        return f"sandbox: unavailable, and [sandbox] required = true: no tool will run ({why})"
    return f"sandbox: unavailable, tools run without the kernel walls: {why}"


def _warn_once() -> None:
    """The mechanism is missing: said once (`enabled = false` is a config warning)."""
    if not _state.warned and _state.settings.enabled:
        _state.warned = True
        line = status_line()
        if line:
            notice(line)


def needs_proxy(settings: SandboxConfig) -> bool:
    """Does any child's profile let it reach the network ("on", "ask" or a host list)? All of
    them go through kep's proxy, "on" too: what it reached is logged."""
    nets = [settings.network, *(r.network for r in (*settings.tools.values(),
                                                    *settings.servers.values()))]
    return any(n is not None and n != "off" for n in nets)


def set_network_asker(asker: Any) -> None:
    """Who answers "may this tool reach this host?" (the TUI's panel, `kep run --yes`)."""
    _state.asker = asker
    if _state.proxy is not None:
        _state.proxy.asker = asker


def network_grant(tool: str, entry: str, allow: bool = True) -> None:
    """A session answer given outside the proxy's own question (the approval panel's `s`,
    `a` and `d` lists): `tool` may (or may not) reach `entry` until kep ends."""
    if _state.proxy is not None:
        (_state.proxy.allow if allow else _state.proxy.refuse)(tool, entry)


async def _ensure_probed() -> None:
    if _state.mechanism is None:  # the one-time probe runs a process: not on the loop
        await asyncio.to_thread(mechanism)


async def _ensure_network() -> None:
    """Start kep's proxy and the shared namespace holding the bridge, once, when needed."""
    loop = asyncio.get_running_loop()
    # Calls starting together wait for one start: else each started a holder, and all but
    # the last were never stopped (a process and a folder in $TMPDIR each).
    if _state.net_lock is None or _state.net_lock[0] is not loop:
        _state.net_lock = (loop, asyncio.Lock())
    async with _state.net_lock[1]:
        await _start_network(loop)


async def _start_network(loop: asyncio.AbstractEventLoop) -> None:
    if _state.mechanism is None:  # the one-time probe runs a process: not on the loop
        await asyncio.to_thread(mechanism)
    if _state.proxy is not None and (_state.proxy_loop is not loop or not _holder_alive()):
        stop_network()  # a new event loop (a test, `kep sandbox`): the old server is gone
    if (_state.proxy is not None or _state.net_failed or not _state.settings.enabled
            or not needs_proxy(_state.settings) or mechanism().missing() is not None):
        return
    from tuiapp.security.sandbox import bridge
    from tuiapp.security.sandbox.proxy import Proxy

    proxy = Proxy()
    proxy.asker = _state.asker
    port = 20000 + int.from_bytes(os.urandom(2), "big") % 40000
    argv = mechanism().holder_argv([visible_python(), "-I", "-S", bridge.__file__, str(port),
                                    proxy.path], proxy.dir)
    if argv is None:
        _state.net_failed = f"{mechanism().name} cannot hold a shared network namespace"
        proxy.remove_socket()  # its folder in $TMPDIR
        return
    holder: subprocess.Popen[bytes] | None = None
    try:  # kep's own helper: the bridge in the namespace every call with network joins
        await proxy.start()
        holder = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, start_new_session=True,
                                  close_fds=True)
        # Its pid (whose namespaces calls join), once its bridge says it listens.
        if (await asyncio.to_thread(holder.stdout.readline)).strip() != b"ready":  # type: ignore[union-attr]
            raise OSError("the network namespace did not come up")
        _state.holder, _state.holder_pid, _state.port = holder, holder.pid, port
        _state.proxy, _state.proxy_loop = proxy, loop
        # The socket's folder lives in $TMPDIR: gone when kep ends, not one left per run.
        atexit.unregister(stop_network)  # once, however many loops started one
        atexit.register(stop_network)
    except (OSError, RuntimeError) as e:
        if holder is not None:
            holder.kill()
        await proxy.close()
        if isinstance(e, RuntimeError):  # no thread to wait in (a fork bomb): this call fails
            raise
        _state.net_failed = f"no network through kep: {e}"
        notice(f"sandbox: {_state.net_failed}; tools get no network")


def stop_network() -> None:
    """End the holder (its bridge) and forget the proxy."""
    if _state.holder is not None:
        with contextlib.suppress(OSError):
            _state.holder.kill()
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            _state.holder.wait(2)
    if _state.proxy is not None:
        if _state.proxy.server is not None:
            _state.proxy.server.close()
        _state.proxy.remove_socket()
    _state.holder, _state.proxy, _state.proxy_loop = None, None, None


def visible_python() -> str:
    """An interpreter a sandboxed child can run: this one, unless it lives under /tmp (private
    inside the walls), then python3 from PATH."""
    if not os.path.abspath(sys.executable).startswith("/tmp/"):
        return sys.executable
    return shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or sys.executable


def _holder_alive() -> bool:
    return _state.holder is not None and _state.holder.poll() is None


def profile_for(cwd: Path | str | None, *, tool: str | None = None, server: str | None = None,
                call_files: Sequence[Path] = ()) -> Profile:
    """The profile of one child started in `cwd`. The root is the opened project's when `cwd`
    lies inside it, else `cwd` itself (a child kep starts elsewhere gets that folder)."""
    here = os.path.realpath(cwd if cwd is not None else os.getcwd())
    root = _state.root if _state.root is not None and under(here, _state.root) else None
    if root is not None and (_state.dotenvs is None or _state.dotenvs.refresh()):
        _state.dotenvs = _state.dotenvs or DotenvIndex(root)  # a `.env` made since: hidden
        _state.profiles.clear()
    key = (here, tool, server, profiles.env_key())  # kept: resolving costs ~1 ms of CPU
    prof = _state.profiles.get(key)
    if prof is None:
        dotenvs = _state.dotenvs.files() if root is not None and _state.dotenvs else None
        root = root or Path(here)
        prof = profiles.resolve(_state.settings, root, tool=tool, server=server,
                                tool_dirs=_state.tool_dirs, dotenvs=dotenvs)
        if len(_state.profiles) >= 256:
            _state.profiles.clear()
        _state.profiles[key] = prof
    if call_files:
        prof = dataclasses.replace(prof, call_files=tuple(call_files))
    return writable_check.bindable(walls.widened(prof, tool), _state.refused, notice)


def prepare(argv: Sequence[str], *, cwd: Path | str | None, env: Mapping[str, str] | None,
            kind: Kind, tool: str | None = None, server: str | None = None,
            call_files: Sequence[Path] = (), visible: Sequence[Path] = ()) -> Wrapped:
    """The command and environment that run `argv` behind the walls. Raises SandboxRequired
    when they cannot be built and the settings require them."""
    _warn_once()
    if not _state.settings.enabled:
        return Wrapped(list(argv), dict(env) if env is not None else None)
    mech = mechanism()
    if mech.missing() is not None:
        if _state.settings.required:
            raise SandboxRequired(f"sandbox required but unavailable: {mech.missing()}")
        return Wrapped(list(argv), dict(env) if env is not None else None)
    programs = exec_check.programs(argv, env, cwd)
    prof = profile_for(cwd, tool=tool, server=server, call_files=call_files)
    # Programs on the child's PATH stay runnable: a PATH folder under /tmp (which the private
    # /tmp would hide) is shown read-only, as tool folders outside the root are (in it: shown).
    on_path = [Path(d) for d in (env if env is not None else os.environ).get("PATH", "").split(
        os.pathsep) if d.startswith("/tmp/") and not under(d, prof.root) and os.path.isdir(d)]
    on_path += [Path(real).parent for real in map(os.path.realpath, programs)
                if real.startswith("/tmp/") and not under(real, prof.root)]
    if visible or on_path:
        prof = dataclasses.replace(prof, visible=(*prof.visible, *visible, *on_path))
    if kind == "mcp":  # a `kep mcp serve` reads its project's trust decision (read-only)
        from tuiapp.security import trust

        prof = dataclasses.replace(prof, kep_files=(trust.records_file(),))
    if kind in ("lister", "forkserver", "helper"):
        prof = dataclasses.replace(prof, network="off")  # listing a tool needs no network
    elif prof.network != "off" and _state.proxy is not None and _holder_alive():
        token = _state.proxy.register(tool or server or "?", prof.network)
        prof = dataclasses.replace(
            prof, proxy=(_state.holder_pid, f"http://{token}:x@127.0.0.1:{_state.port}"))
    return mech.wrap(prof, argv, env, Path(cwd) if cwd is not None else None)


def active() -> bool:
    """True when children run behind the walls."""
    return _state.settings.enabled and mechanism().missing() is None


# ---- the starters: each wraps, then starts ---------------------------------------------------


async def exec_protocol(loop: asyncio.AbstractEventLoop, factory: Callable[[], Any],
                        argv: Sequence[str], *, cwd: Path | str | None,
                        env: Mapping[str, str] | None, kind: Kind, tool: str | None = None,
                        call_files: Sequence[Path] = (), **kw: Any) -> Any:
    """loop.subprocess_exec behind the walls (tool calls and listers, tools/proc.py)."""
    await _ensure_network() if kind != "lister" else await _ensure_probed()
    w = prepare(argv, cwd=cwd, env=env, kind=kind, tool=tool, call_files=call_files)
    if w.resident is not None and kw.get("stdout") == kw.get("stderr") == subprocess.PIPE:
        started = await starters.pool.start_call(loop, w, factory, cwd, kw.get("stdin"),
                                                 _launch_starter, listing=kind == "lister")
        if started is not None:
            return started
    return await loop.subprocess_exec(factory, *w.argv, cwd=cwd, env=w.env, **kw)


async def warm(argv: Sequence[str], *, cwd: Path | str | None, env: Mapping[str, str] | None,
               kind: Kind) -> None:
    """Many children like `argv` are coming (a listing): start their walls' starter now."""
    await _ensure_probed()
    with contextlib.suppress(OSError):  # (that command will say why itself)
        w = prepare(argv, cwd=cwd, env=env, kind=kind)
        starters.pool.warm(asyncio.get_running_loop(), w, _launch_starter)


def _launch_starter(wall_args: list[str], sock: Any, mode: str) -> subprocess.Popen[bytes]:
    """kep's own helper: a call starter behind the walls, its socket on fd 0 (starters.py)."""
    return subprocess.Popen(starters.command(wall_args, visible_python(), mode), stdin=sock,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=starters.own_env(), close_fds=True, start_new_session=True)


async def create_exec(argv: Sequence[str], *, cwd: Path | str | None,
                      env: Mapping[str, str] | None, kind: Kind, tool: str | None = None,
                      **kw: Any) -> asyncio.subprocess.Process:
    """asyncio.create_subprocess_exec behind the walls (the fork server)."""
    await _ensure_network() if kind not in ("lister", "forkserver") else await _ensure_probed()
    w = prepare(argv, cwd=cwd, env=env, kind=kind, tool=tool)
    return await asyncio.create_subprocess_exec(*w.argv, cwd=cwd, env=w.env, **kw)


async def open_process(argv: Sequence[str], *, cwd: Path | str | None,
                       env: Mapping[str, str] | None, server: str | None = None,
                       **kw: Any) -> Any:
    """anyio.open_process behind the walls (MCP stdio servers)."""
    import anyio

    await _ensure_network()
    # Files the server's own command names (a script outside the root, under /tmp): shown
    # read-only, as tool folders outside the root are (hidden paths stay hidden).
    shown = [Path(os.path.realpath(a)) for a in argv[1:] if os.path.isabs(a) and os.path.exists(a)]
    w = prepare(argv, cwd=cwd, env=env, kind="mcp", server=server, visible=shown)
    return await anyio.open_process(w.argv, cwd=cwd, env=w.env, **kw)


def popen(argv: Sequence[str], *, kind: Kind, cwd: Path | str | None = None,
          env: Mapping[str, str] | None = None, **kw: Any) -> subprocess.Popen[bytes]:
    """A synchronous child behind the walls (kep's own helpers: the rule-regex worker)."""
    w = prepare(argv, cwd=cwd, env=env, kind=kind)
    return subprocess.Popen(w.argv, cwd=cwd, env=w.env, **kw)


def popen_unconfined(argv: Sequence[str], why: Unconfined, **kw: Any) -> subprocess.Popen[bytes]:
    """A child that must stay outside the walls, named by why (see the module docstring)."""
    return subprocess.Popen(argv, **kw)


def run_unconfined(argv: Sequence[str], why: Unconfined, **kw: Any
                   ) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(argv, check=False, **kw)
