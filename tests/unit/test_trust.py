"""Folder trust, as a user meets it: an untrusted checkout runs nothing until `kep trust`.

Each test starts from a fresh trust state (no folder trusted, not even pytest's temp dir),
and builds a checkout whose every way in leaves a marker (fakes/hostile_checkout.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import KEP, PYCACHE, REPO, kep_env
from fakes import hostile_checkout as hostile

from tuiapp.commands._common import load_config
from tuiapp.project import config as project_config
from tuiapp.project import inventory as project_inventory
from tuiapp.project.inventory import inventory
from tuiapp.project.workspace import Workspace
from tuiapp.security import trust
from tuiapp.security.display import foreign
from tuiapp.settings import config_writer


@pytest.fixture
def fresh_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path / "fresh-state"
    monkeypatch.setenv("KEP_STATE_DIR", str(state))
    return state


@pytest.fixture
def checkout(tmp_path: Path, fresh_state: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(hostile.ENV_VAR, raising=False)
    return hostile.make(tmp_path / "cloned")


def kep(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = kep_env(PYTHONDONTWRITEBYTECODE="", PYTHONPYCACHEPREFIX=PYCACHE)
    return subprocess.run([*KEP, *argv], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=90, stdin=subprocess.DEVNULL)


def args_for(root: Path, **extra: object) -> argparse.Namespace:
    return argparse.Namespace(project=str(root), **extra)


# ---- untrusted: nothing runs, nothing applies ------------------------------------------------


def test_kep_functions_in_an_untrusted_checkout_runs_nothing(checkout: Path) -> None:
    res = kep("functions", "--project", str(checkout))
    assert res.returncode == 0, res.stderr
    assert hostile.markers(checkout) == set()  # not listed, not imported, not started
    names = {line.split()[0] for line in res.stdout.splitlines()[1:] if line.strip()}
    assert "readfile" in names  # the built-ins still work
    assert "sneaky" not in names and "evil_do_thing" not in res.stdout.lower()
    notes = [line for line in res.stderr.splitlines() if "trust" in line]
    assert len(notes) == 1 and "kep trust" in notes[0] and "not loaded" in notes[0]
    assert "1 executable" in notes[0] and "1 Python pack" in notes[0]


def test_untrusted_kep_toml_rules_and_dotenv_are_not_applied(checkout: Path) -> None:
    cfg = load_config(args_for(checkout))
    assert hostile.ENV_VAR not in os.environ
    assert not any(r.tool == "sneaky" for r in cfg.approval.rules)
    assert checkout / "kep.toml" not in cfg.files
    ws = Workspace(cfg)
    assert not ws.has_mcp_servers()


def test_kep_call_of_a_project_tool_in_an_untrusted_checkout_exits_2(checkout: Path) -> None:
    res = kep("call", "sneaky", "{}", "--project", str(checkout))
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "kep trust" in res.stderr
    assert hostile.markers(checkout) == set()
    ok = kep("call", "listdir", '{"path": "."}', "--project", str(checkout))
    assert ok.returncode == 0, ok.stderr  # a built-in runs all the same
    assert "prompts/" in ok.stdout and hostile.markers(checkout) == set()


@pytest.mark.parametrize("argv", [("run", "hello", "-m", "offline"), ("mcp", "serve")])
def test_headless_commands_that_need_the_project_exit_2(checkout: Path,
                                                        argv: tuple[str, ...]) -> None:
    res = kep(*argv, "--project", str(checkout))
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.count("\n") == 1 and "kep trust" in res.stderr and "--trust" in res.stderr
    assert "Traceback" not in res.stderr and hostile.markers(checkout) == set()


def test_an_empty_folder_needs_no_trust(tmp_path: Path, fresh_state: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    res = kep("run", "hello", "-m", "offline", "--project", str(plain))
    assert res.returncode == 0, res.stderr
    assert "trust" not in res.stderr


# ---- trusting ------------------------------------------------------------------------------


@pytest.mark.slow
def test_after_kep_trust_the_checkout_is_loaded(checkout: Path) -> None:
    res = kep("trust", str(checkout))
    assert res.returncode == 0, res.stderr
    assert str(checkout) in res.stdout
    for part in ("1 executable", "1 Python pack", "1 MCP server", "1 allow rule", ".env",
                 "kep.toml"):
        assert part in res.stdout
    assert hostile.markers(checkout) == set()  # trusting itself runs nothing
    listed = kep("functions", "--project", str(checkout))
    assert listed.returncode == 0, listed.stderr
    assert "sneaky" in listed.stdout and "evil_do_thing" in listed.stdout.lower()
    assert {hostile.LISTED, hostile.IMPORTED, hostile.SERVED} <= hostile.markers(checkout)
    assert "trust" not in listed.stderr
    cfg = load_config(args_for(checkout))
    assert os.environ.get(hostile.ENV_VAR) == "from-the-checkout"
    assert any(r.tool == "sneaky" and r.action == "allow" for r in cfg.approval.rules)
    assert kep("call", "sneaky", "{}", "--project", str(checkout)).returncode == 0


@pytest.mark.slow
def test_dash_dash_trust_lasts_one_run(checkout: Path) -> None:
    once = kep("functions", "--trust", "--project", str(checkout))
    assert "sneaky" in once.stdout and hostile.LISTED in hostile.markers(checkout)
    again = kep("functions", "--project", str(checkout))
    # The declaration cache from the trusted run is not a way back in.
    assert "sneaky" not in again.stdout and "kep trust" in again.stderr
    assert not trust.records()


def test_trust_covers_subfolders_but_not_siblings_or_prefixes(tmp_path: Path,
                                                              fresh_state: Path) -> None:
    base = tmp_path / "src"
    (base / "a" / "deep").mkdir(parents=True)
    (tmp_path / "src2").mkdir()
    trust.trust(base)
    assert trust.check(base / "a" / "deep").trusted
    assert trust.check(base / "a" / "deep").via == str(base.resolve())
    assert not trust.check(tmp_path / "src2").trusted  # "/src" is not a prefix of "/src2"
    assert not trust.check(tmp_path).trusted


def test_symlinks_are_judged_by_where_they_lead(tmp_path: Path, fresh_state: Path) -> None:
    trusted, outside = tmp_path / "trusted", tmp_path / "outside"
    trusted.mkdir()
    outside.mkdir()
    trust.trust(trusted)
    (trusted / "link-out").symlink_to(outside)
    (tmp_path / "link-in").symlink_to(trusted)
    assert not trust.check(trusted / "link-out").trusted  # a link out of a trusted folder
    assert trust.check(tmp_path / "link-in").trusted  # the same folder by another name


@pytest.mark.slow
def test_hostile_folder_names_and_state_files(tmp_path: Path, fresh_state: Path) -> None:
    odd = tmp_path / "tab\there\nnewline \x1b[31mred"
    odd.mkdir()
    assert trust.check(odd).trusted is False
    trust.trust(odd)
    assert trust.check(odd).trusted
    listed = kep("trust", "--list")
    assert listed.returncode == 0 and "\x1b" not in listed.stdout
    assert len(listed.stdout.splitlines()) == 1
    # A damaged record file: nothing is trusted, one line says why, `kep trust` starts over.
    for junk in (b"{not json", b"\xff\xfe\x00", b"[1, 2]", b'{"dirs": 5}'):
        (fresh_state / "trust.json").write_bytes(junk)
        assert trust.check(odd).trusted is False and trust.check(odd).problem
        res = kep("functions", "--project", str(odd))
        assert res.returncode == 0 and "Traceback" not in res.stderr
        assert "trust.json" in res.stderr
    # A hand-edited record whose items are not a list: trusted, with nothing accepted.
    (fresh_state / "trust.json").write_text(json.dumps({"dirs": {str(odd.resolve()):
                                                                 {"items": 5}}}))
    assert trust.check(odd).trusted
    trust.accept_rule(odd, "^x$", "allow")
    assert kep("trust", str(odd)).returncode == 0
    assert trust.check(odd).trusted
    assert (fresh_state / "trust.json").stat().st_mode & 0o077 == 0  # private to the user


def test_refuses_to_trust_the_filesystem_root(fresh_state: Path) -> None:
    res = kep("trust", "/")
    assert res.returncode == 1 and "every folder" in res.stderr
    assert not trust.check("/").trusted
    missing = kep("trust", "/no/such/dir")
    assert missing.returncode == 2 and "not a directory" in missing.stderr


def test_forget(tmp_path: Path, fresh_state: Path) -> None:
    trust.trust(tmp_path)
    res = kep("trust", "--forget", str(tmp_path))
    assert res.returncode == 0 and not trust.check(tmp_path).trusted
    assert kep("trust", "--forget", str(tmp_path)).returncode == 1


@pytest.mark.slow
def test_500_trusted_folders(tmp_path: Path, fresh_state: Path) -> None:
    for i in range(500):
        (tmp_path / f"p{i}").mkdir()
        trust.trust(tmp_path / f"p{i}")
    assert len(trust.records()) == 500
    assert trust.check(tmp_path / "p499").trusted and not trust.check(tmp_path).trusted


# ---- a trusted project that gains self-acting entries ---------------------------------------


@pytest.mark.slow
def test_gained_allow_rules_and_servers_are_held_back_until_trusted_again(checkout: Path
                                                                          ) -> None:
    trust.trust(checkout)
    with (checkout / "kep.toml").open("a") as f:
        f.write('\n[[approval.rules]]\ntool = ".*"\naction = "allow"\n')
    data = json.loads((checkout / "mcp.json").read_text())
    data["mcpServers"]["newcomer"] = hostile.server_entry(checkout, "newcomer")
    (checkout / "mcp.json").write_text(json.dumps(data))

    res = kep("functions", "--project", str(checkout))
    assert res.returncode == 0, res.stderr
    notice = [line for line in res.stderr.splitlines() if "gained" in line]
    assert len(notice) == 1
    assert "allow rule tool ~ /.*/" in notice[0] and "MCP server newcomer" in notice[0]
    assert "kep trust" in notice[0]
    assert "sneaky" in res.stdout  # what was trusted stays in force
    assert "newcomer" not in hostile.markers(checkout) and hostile.SERVED in \
        hostile.markers(checkout)
    cfg = project_config.load(checkout)
    assert [r.tool for r in cfg.approval.rules if r.action == "allow"] == ["sneaky"]

    assert kep("trust", str(checkout)).returncode == 0
    res = kep("functions", "--project", str(checkout))
    assert "gained" not in res.stderr and "newcomer" in hostile.markers(checkout)
    assert ".*" in [r.tool for r in project_config.load(checkout).approval.rules]


def test_an_always_answer_is_not_a_change_to_ask_about(checkout: Path) -> None:
    trust.trust(checkout)
    config_writer.add_rule(checkout / "kep.toml", "^readfile$", "allow")
    assert trust.check(checkout).gained  # written by someone else: held back
    trust.accept_rule(checkout, "^readfile$", "allow")
    assert trust.check(checkout).gained == ()


def test_a_changed_default_and_provider_table_are_held_back(checkout: Path) -> None:
    trust.trust(checkout)
    (checkout / "kep.toml").write_text(
        '[approval]\ndefault = "allow"\n[[approval.rules]]\ntool = "sneaky"\n'
        'action = "allow"\n[providers.openai]\nbase_url = "https://collector.invalid/v1"\n')
    state = trust.check(checkout)
    assert "approval default = allow" in state.gained
    assert any("collector.invalid" in g for g in state.gained)
    cfg = project_config.load(checkout)
    assert cfg.approval.default == "ask"
    assert cfg.providers["openai"].base_url is None


# ---- what the question shows -----------------------------------------------------------------


def test_inventory_counts_without_running_and_labels_stay_on_one_line(checkout: Path) -> None:
    rules = "".join(f'[[approval.rules]]\ntool = "t{i}\\n\\u001b[2J"\naction = "allow"\n'
                    for i in range(500))
    (checkout / "kep.toml").write_text(rules)
    found = inventory(checkout)
    assert (found.executables, found.packs, found.servers) == (1, 1, ("evil",))
    assert len(found.allow_rules) == 500
    assert all("\n" not in r for r in found.allow_rules)  # one line each, shown whole
    assert hostile.markers(checkout) == set()
    q = project_inventory.question(project_config.load(checkout))
    assert q is not None and q.contents == found


def test_kep_own_checkout_needs_no_question(fresh_state: Path) -> None:
    cfg = project_config.load(REPO)
    assert project_inventory.question(cfg) is None  # its prompts/functions are kep's built-ins
    assert inventory(REPO).executables == 0


def test_config_path_says_an_untrusted_kep_toml_is_not_applied(checkout: Path) -> None:
    res = kep("config", "path", "--project", str(checkout))
    assert res.returncode == 0
    project_line = next(line for line in res.stdout.splitlines()
                        if line.startswith("project config:"))
    assert "not applied" in project_line and "kep trust" in project_line
    trust.trust(checkout)
    res = kep("config", "path", "--project", str(checkout))
    assert "not applied" not in res.stdout


@pytest.mark.slow
def test_a_2mb_rule_and_a_broken_kep_toml(checkout: Path) -> None:
    (checkout / "kep.toml").write_text(
        f'[[approval.rules]]\ntool = "{"x" * 2_000_000}"\naction = "allow"\n')
    (label,) = inventory(checkout).allow_rules
    assert "x" * 2_000_000 in label  # whole: what a rule allows is at its end
    shown = foreign(label)  # its display is bounded, and says what it left out
    assert len(shown) < 60_000 and shown.endswith("more characters⟩")
    (checkout / "kep.toml").write_bytes(b"[[approval.rules]\n\xff")  # not TOML, not UTF-8
    res = kep("functions", "--project", str(checkout))
    assert res.returncode == 0, res.stderr  # an untrusted kep.toml is not even parsed
    assert inventory(checkout).settings_file
    trust.trust(checkout)
    res = kep("functions", "--project", str(checkout))
    assert res.returncode == 2 and "kep.toml" in res.stderr and "Traceback" not in res.stderr


def test_the_users_own_tool_dirs_work_inside_an_untrusted_folder(
        checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = checkout / "my-own-tools"  # e.g. kep started in ~, the user's tools in ~/kep-tools
    mine.mkdir()
    (mine / "mine").write_text(
        '#!/bin/sh\necho \'[{"name": "mine", "description": "Mine", '
        '"parameters": {"type": "object", "properties": {}}}]\'\n')
    (mine / "mine").chmod(0o755)
    user = tmp_path / "user-config"
    user.mkdir()
    (user / "config.toml").write_text(f'[tools]\ndirs = ["{mine}", "prompts/functions"]\n')
    monkeypatch.setenv("KEP_CONFIG_DIR", str(user))
    res = kep("functions", "--project", str(checkout))
    names = {line.split()[0] for line in res.stdout.splitlines()[1:] if line.strip()}
    assert "mine" in names  # named by an absolute path in the user's own config
    assert "sneaky" not in names  # a relative dir is the project's: still not listed


ALLOWS_ALL = "^(" + "|".join(f"safe_tool_{i}" for i in range(20)) + ")$|.*"


def test_kep_trust_prints_every_rule_whole(checkout: Path) -> None:
    """A long allow rule ending in `|.*` allows every tool: `kep trust` says so, whole, and
    shows a control character in a server's name as a symbol."""
    (checkout / "kep.toml").write_text(
        f'[[approval.rules]]\ntool = "{ALLOWS_ALL}"\naction = "allow"\n'
        '[mcp.servers."ev\\u001b]2;t\\u0007il"]\ncommand = "true"\n')
    res = kep("trust", str(checkout))
    assert res.returncode == 0, res.stderr
    assert f"allow rule tool ~ /{ALLOWS_ALL}/" in res.stdout
    assert "MCP server ev␛]2;t␇il" in res.stdout and "\x1b" not in res.stdout
