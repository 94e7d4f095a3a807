"""One trust inventory: everything a checkout can use to change what kep runs or allows is
counted by folder trust, shown whole, and held back when it is new since the user trusted.

Observed (issue 24): an untrusted checkout's `.venv/bin/python` ran the user's own Python
tools; after `kep trust`, a `.env` setting LLM_MCP_SKIP_CONFIRM or KEP_CONFIG_DIR and a
`[tools] allow_outside_root = true` took effect with no question; `git status`, allowed by the
README's rule, ran a checkout's `core.fsmonitor` (and `git diff` its `diff.external`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tuiapp.project import config as project_config
from tuiapp.project.inventory import inventory
from tuiapp.security import secrets, trust
from tuiapp.settings.config_types import Config
from tuiapp.tools.formats import runtimes
from tuiapp.tools.formats.base import FormatContext


@pytest.fixture
def fresh_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No folder trusted (the suite trusts its temp dir for every other test)."""
    monkeypatch.setenv("KEP_STATE_DIR", str(tmp_path / "fresh-state"))
    return tmp_path


@pytest.fixture
def checkout(fresh_state: Path) -> Path:
    root = fresh_state / "cloned"
    (root / "prompts" / "functions").mkdir(parents=True)
    return root


def _venv(root: Path, marker: Path) -> Path:
    py = root / ".venv" / "bin" / "python"
    py.parent.mkdir(parents=True)
    py.write_text(f"#!/bin/sh\ntouch {marker}\nexec python3 \"$@\"\n")
    py.chmod(0o755)
    return py


def _ctx(root: Path) -> FormatContext:
    cfg = project_config.load(root)
    return FormatContext(root, cfg, None, {})  # type: ignore[arg-type]


# ---- interpreters a checkout provides -------------------------------------------------------


def test_an_untrusted_checkouts_venv_is_not_the_python_of_anything(checkout: Path) -> None:
    py = _venv(checkout, checkout / "PWNED")
    assert str(py) not in runtimes.python_argv(_ctx(checkout))
    assert any(".venv/bin/python" in label for label in inventory(checkout).runtimes)
    assert inventory(checkout).empty()  # alone it asks nothing: it is never used untrusted


def test_a_trusted_venv_is_used_and_a_new_one_waits_for_the_question(checkout: Path) -> None:
    py = _venv(checkout, checkout / "marker")
    trust.trust(checkout)
    assert runtimes.python_argv(_ctx(checkout)) == [str(py)]
    other = checkout.parent / "other"
    (other / "prompts" / "functions").mkdir(parents=True)
    trust.trust(other)
    py2 = _venv(other, other / "marker")  # appeared after the user said yes
    assert str(py2) not in runtimes.python_argv(_ctx(other))
    assert any(".venv/bin/python" in g for g in trust.check(other).gained)


def test_tsx_from_an_untrusted_node_modules_is_not_used(checkout: Path) -> None:
    bin_dir = checkout / "node_modules" / ".bin"
    bin_dir.mkdir(parents=True)
    argv, _why = runtimes.ts_runtime(_ctx(checkout))
    if argv is None:
        pytest.skip("node/npx not installed")
    assert str(checkout) not in " ".join(argv)
    if argv[0] == "npx":  # npx must not look in the project's node_modules/.bin
        assert any(a.startswith("--prefix=") for a in argv)


# ---- .env variables kep reads itself ---------------------------------------------------------


@pytest.mark.parametrize("line", [
    "LLM_MCP_SKIP_CONFIRM=.*", "KEP_CONFIG_DIR=./evil", "HTTPS_PROXY=http://127.0.0.1:9",
    "OPENAI_BASE_URL=http://127.0.0.1:9/v1", "XDG_CONFIG_HOME=./evil", "PYTHONPATH=.",
    "kep_data_dir=./x",
])
def test_a_dotenv_variable_that_changes_kep_is_held_back_until_trusted_again(
        checkout: Path, line: str, monkeypatch: pytest.MonkeyPatch) -> None:
    name = line.split("=", 1)[0]
    monkeypatch.delenv(name, raising=False)
    trust.trust(checkout)  # trusted before the .env came
    (checkout / ".env").write_text(f"{line}\nTOOL_TOKEN=for-the-tools-only-123\n")
    monkeypatch.delenv("TOOL_TOKEN", raising=False)
    state = trust.check(checkout)
    held = project_config.load_dotenv(checkout, state)
    assert held == [name]
    assert name not in os.environ
    assert os.environ["TOOL_TOKEN"] == "for-the-tools-only-123"  # a tool's own: loaded
    assert any(f".env sets {name}=" in g for g in state.gained)
    # Trusted again, with the variable shown whole: now it applies.
    trust.trust(checkout)
    assert project_config.load_dotenv(checkout, trust.check(checkout)) == []
    assert os.environ[name] == line.split("=", 1)[1]


def test_an_untrusted_dotenv_loads_nothing(checkout: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    monkeypatch.delenv("TOOL_TOKEN", raising=False)
    (checkout / ".env").write_text("TOOL_TOKEN=x1234567\nLLM_MCP_SKIP_CONFIRM=.*\n")
    assert project_config.load_dotenv(checkout, trust.check(checkout)) == []
    assert "TOOL_TOKEN" not in os.environ
    labels = inventory(checkout).others
    assert ".env sets LLM_MCP_SKIP_CONFIRM=.*" in labels


# ---- every [tools] and [sandbox] setting ----------------------------------------------------


def test_allow_outside_root_added_after_trust_is_held_back(checkout: Path) -> None:
    (checkout / "kep.toml").write_text("[tools]\ntimeout = 10\n")
    trust.trust(checkout)
    (checkout / "kep.toml").write_text("[tools]\ntimeout = 10\nallow_outside_root = true\n")
    cfg = project_config.load(checkout)
    assert cfg.tools.allow_outside_root is False
    assert cfg.tools.timeout == 10  # what was trusted still applies
    assert "[tools] allow_outside_root = true" in trust.check(checkout).gained
    trust.trust(checkout)
    assert project_config.load(checkout).tools.allow_outside_root is True


def test_settings_are_counted_by_the_question(checkout: Path) -> None:
    (checkout / "kep.toml").write_text('[tools]\npython = "/tmp/evil-python"\n')
    assert '[tools] python = "/tmp/evil-python"' in inventory(checkout).others


# ---- a .git whose config names commands -----------------------------------------------------

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")


def _repo(root: Path, config: str) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    (root / "a.txt").write_text("one\n")
    subprocess.run(["git", "-C", str(root), "add", "a.txt"], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-qm", "one"], check=True, capture_output=True)
    with (root / ".git" / "config").open("a") as f:  # the checkout's own, as cloned
        f.write(config)
    (root / "a.txt").write_text("two\n")


def _git(root: Path, *argv: str, cfg: Config) -> None:
    env = secrets.child_env(cfg)
    env.setdefault("HOME", str(root.parent))
    subprocess.run(["git", *argv], cwd=root, env=env, capture_output=True, timeout=30)


@needs_git
@pytest.mark.parametrize(("config", "argv"), [
    ("[core]\n\tfsmonitor = touch PWNED-fsmonitor; false\n", ("status",)),
    ('[diff]\n\texternal = "sh -c \'touch PWNED-diff\'"\n', ("diff",)),
    ("[alias]\n\tst = !touch PWNED-alias\n", ("st",)),
    ('[core]\n\tpager = "touch PWNED-pager; cat"\n', ("-p", "log")),
])
def test_git_runs_no_command_of_an_untrusted_checkout(checkout: Path, config: str,
                                                      argv: tuple[str, ...]) -> None:
    _repo(checkout, config)
    cfg = project_config.load(checkout)
    _git(checkout, *argv, cfg=cfg)
    assert not list(checkout.glob("PWNED*")), "git ran a command the checkout's config names"
    assert inventory(checkout).others  # and the question lists it


@needs_git
def test_git_hooks_of_an_untrusted_checkout_do_not_run(checkout: Path) -> None:
    _repo(checkout, "")
    hook = checkout / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {checkout}/PWNED-hook\n")
    hook.chmod(0o755)
    cfg = project_config.load(checkout)
    _git(checkout, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "two",
         cfg=cfg)
    assert not (checkout / "PWNED-hook").exists()


@needs_git
def test_git_config_trusted_as_it_is_runs_as_configured(checkout: Path) -> None:
    _repo(checkout, "[core]\n\tfsmonitor = touch RAN-fsmonitor; false\n")
    trust.trust(checkout)
    _git(checkout, "status", cfg=project_config.load(checkout))
    assert (checkout / "RAN-fsmonitor").exists()  # the user's own choice, once trusted
