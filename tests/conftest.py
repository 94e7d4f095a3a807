"""Shared fixtures: every test gets its own config/data/cache/state dirs and no API keys."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # so tests can `from fakes.llm_server import …`

# Hermetic from the first import on: environments that test modules build at import time (and
# every tool, npm or git they start) see a throwaway home, never the real one. Each test then
# gets dirs of its own (isolated_home below).
REAL_HOME = Path.home()
SESSION_HOME = Path(tempfile.mkdtemp(prefix="kep-test-home-"))
# Removed at the end of the run (pytest_unconfigure, also in each parallel worker, whose exit
# skips atexit handlers) or at exit, whichever comes first.
atexit.register(shutil.rmtree, SESSION_HOME, True)
for _var, _sub in (("HOME", ""), ("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
                   ("XDG_CACHE_HOME", ".cache"), ("XDG_STATE_HOME", ".local/state"),
                   ("KEP_CONFIG_DIR", "kep-config"), ("KEP_DATA_DIR", "kep-data"),
                   ("KEP_CACHE_DIR", "kep-cache"), ("KEP_STATE_DIR", "kep-state")):
    os.environ[_var] = str(SESSION_HOME / _sub) if _sub else str(SESSION_HOME)
# `python3` for the tools the tests write (`#!/usr/bin/env python3`) and the commands they
# start is the interpreter under test, not whatever comes first on the caller's PATH: a
# version manager's shim there (pyenv's) runs a shell script per start, 150 ms of CPU instead
# of about 20, and the suite, which starts hundreds of Python tools, spent an eighth of its
# CPU in it.
os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable),
                                      *(d for d in os.environ.get("PATH", "").split(os.pathsep)
                                        if d and d != os.path.dirname(sys.executable))])
# Downloads for the optional peer tests (npm MCP servers, tsx) live here: in the checkout,
# git-ignored, reused between runs. KEP_TEST_NO_DOWNLOADS=1 skips those tests instead.
PEERS_DIR = REPO / "tests" / ".peers"
# Bytecode of the `kep` subprocesses the tests start: kept between runs, in the checkout's
# (git-ignored) pytest cache, never in $TMPDIR.
PYCACHE = str(REPO / ".pytest_cache" / "kep-pycache")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The whole suite (`pytest` with no paths) runs on every core by default (two workers a
    core), without the tests marked `slow` (`-m slow` runs just those, KEP_TEST_SLOW=1
    everything); a few files named on the command line run in one process. `-n N` (`-n 0`:
    one process) or `-p no:xdist` choose otherwise. The tests of one xdist_group (the
    pseudo-terminal ones, which wait on a real terminal's pace) share a worker, so they never
    compete with each other for the cores."""
    if (config.args_source == pytest.Config.ArgsSource.TESTPATHS and not config.option.markexpr
            and not os.environ.get("PYTEST_XDIST_WORKER")
            and os.environ.get("KEP_TEST_SLOW") != "1"):
        # The whole suite leaves out the `slow` tests (end to end through real kep processes,
        # MCP servers, a pseudo-terminal): `.ci/run` runs them too, with `-m slow`. Workers
        # get this option from the controller.
        config.option.markexpr = "not slow"
        # xdist's workers build their own options: they learn it from the environment.
        os.environ["KEP_TEST_NOT_SLOW"] = "1"
    if (not config.pluginmanager.hasplugin("xdist") or os.environ.get("PYTEST_XDIST_WORKER")
            or config.option.numprocesses is not None or config.getoption("usepdb", False)
            or config.args_source != pytest.Config.ArgsSource.TESTPATHS):
        return
    # Two workers per core: most tests wait (on a redraw, a child, a timer), so with one per
    # core the cores sat idle half the time (tests/ui on 2 cores: 389 s with 2, 261 s with 4).
    workers = os.environ.get("KEP_TEST_WORKERS", "")
    config.option.numprocesses = (int(workers) if workers.isdigit()
                                  else 2 * (len(os.sched_getaffinity(0)) or 1))
    if config.option.dist == "no":
        config.option.dist = "loadgroup"


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "numprocesses", None) and not os.environ.get("PYTEST_XDIST_WORKER"):
        from bytecode_warmup import warm

        warm(REPO, config)  # once, before the workers start (each would compile it all)
    if (os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("KEP_TEST_NOT_SLOW") == "1"
            and not config.option.markexpr):
        config.option.markexpr = "not slow"  # a worker of the whole suite's default run


NARROW = (80, 24)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A Pilot test run at 80x24 and at a wide size: the wide twin is `slow` (the README's
    command runs the narrow one, where layouts break first; `.ci/run` runs both)."""

    def key(item: pytest.Item) -> tuple[object, ...]:
        params = getattr(getattr(item, "callspec", None), "params", {})
        rest = tuple(sorted((k, repr(v)) for k, v in params.items() if k != "size"))
        return (item.path, getattr(item, "originalname", item.name), rest)

    def size(item: pytest.Item) -> tuple[int, ...] | None:
        value = getattr(getattr(item, "callspec", None), "params", {}).get("size")
        return tuple(value) if isinstance(value, (tuple, list)) else None

    narrow = {key(item) for item in items if size(item) == NARROW}
    for item in items:
        if size(item) not in (None, NARROW) and key(item) in narrow:
            item.add_marker(pytest.mark.slow)


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(SESSION_HOME, ignore_errors=True)
    # The last test's network proxy (its socket folder is in $TMPDIR): kep removes it at exit,
    # but a parallel worker's exit skips atexit handlers.
    from tuiapp.security.sandbox import spawn

    spawn.stop_network()

KEY_VARS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "LLM_MCP_SKIP_CONFIRM",
    "LLM_MCP_NEED_CONFIRM",
)


@pytest.fixture(autouse=True, scope="session")
def session_trust(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    from tuiapp.security import trust

    # Environments test modules built at import time use the session state dir: trust there
    # what the suite builds (pytest's temp dir) and its own fixtures.
    trust.trust(tmp_path_factory.getbasetemp())
    trust.trust(REPO / "tests" / "fixtures")
    yield


@pytest.fixture(autouse=True)
def fresh_provider_lessons() -> Iterator[None]:
    """What a model refused, and what a server lists, is kept per process: each test starts
    with nothing learned or listed."""
    from tuiapp.providers import model_lists, optional_fields

    optional_fields.forget()
    model_lists.forget()
    yield
    optional_fields.forget()
    model_lists.forget()


@pytest.fixture(autouse=True)
def default_sandbox_settings() -> None:
    """The sandbox's settings are process-wide (the opened project's `[sandbox]`): each test
    starts with the defaults, so one test's `required = true` never refuses the next test's
    children (the fork server's tests failed after the sandbox's `required` test)."""
    from tuiapp.security.sandbox import spawn
    from tuiapp.settings.config_types import SandboxConfig

    spawn.configure(SandboxConfig(), None)


@pytest.fixture(params=[pytest.param("own bwrap", marks=pytest.mark.slow), "call starter",
                        "listing starter"])
def every_start_path(request: pytest.FixtureRequest,
                     monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The test once for each way kep starts a child behind the walls: a bwrap of its own; its
    walls' resident starter making a spare per call (_child_starter.py); the same starter in
    listing mode, a thread and a posix_spawn per child (_child_listing_starter.py), which
    every child is started by here. The walls hold on all three. The bwrap twin is `slow` (the
    README's command runs the starters', the newer paths; every other test's first calls take
    the bwrap path; `.ci/run` runs all three)."""
    from tuiapp.security.sandbox import starters

    starters.pool.close()
    handed: list[bool] = []
    if request.param == "own bwrap":
        monkeypatch.setattr(starters, "START_AT_USE", 10**9)
        monkeypatch.setattr(starters.Pool, "warm", lambda *a, **k: None)
    else:
        monkeypatch.setattr(starters, "START_AT_USE", 1)
        monkeypatch.setattr(starters.pool, "wait_for_start", True)
        start_call = starters.Pool.start_call
        listing = request.param == "listing starter"

        async def recorded(self: Any, *a: Any, **k: Any) -> Any:
            got = await start_call(self, *a, **{**k, "listing": listing})
            handed.append(got is not None)
            return got

        monkeypatch.setattr(starters.Pool, "start_call", recorded)
    yield request.param
    starters.pool.close()
    assert all(handed), f"{handed.count(False)} of {len(handed)} calls went around the starter"


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    home = tmp_path_factory.mktemp("kephome")
    for name, sub in (
        ("KEP_CONFIG_DIR", "config"),
        ("KEP_DATA_DIR", "data"),
        ("KEP_CACHE_DIR", "cache"),
        ("KEP_STATE_DIR", "state"),
    ):
        monkeypatch.setenv(name, str(home / sub))
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    # Folder trust: projects the tests build under pytest's temp dir, and the suite's own
    # fixtures, are trusted (as a user would have trusted them); tests of trust itself use a
    # fresh state dir. `--trust` given in-process lasts for one test only.
    from tuiapp.security import trust

    monkeypatch.setattr(trust, "_RUN_TRUSTED", set())
    trust.trust(tmp_path_factory.getbasetemp())
    trust.trust(REPO / "tests" / "fixtures")
    # The secrets registry is process-wide (like os.environ): each test starts with none.
    from tuiapp.security import secrets

    for name, empty in (("_dotenv_names", set()), ("_passed_values", {}),
                        ("_dotenv_values", {}), ("_last_config", None)):
        monkeypatch.setattr(secrets, name, empty)
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project: a directory with prompts/functions/ (so it is its own root)."""
    root = tmp_path / "proj"
    (root / "prompts" / "functions").mkdir(parents=True)
    return root


def write_tool(path: Path, text: str) -> Path:
    """Write an executable file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


KEP = [sys.executable, "-m", "tuiapp"]


def kep_env(**extra: str) -> dict[str, str]:
    """The environment a `kep` subprocess should get in a test (isolated dirs are inherited)."""
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
    env.update(extra)
    return env


@pytest.fixture
def unsandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Children run without the sandbox's walls: for tests of what kep does where the kernel
    cannot build them (process groups, the watchdog), which read a child's pids from outside
    (inside the walls a pid is the sandbox's own)."""
    from tuiapp.security.sandbox import spawn
    from tuiapp.security.sandbox.none import NoSandbox

    monkeypatch.setattr(spawn._state, "mechanism", NoSandbox("test of the unsandboxed path"))
