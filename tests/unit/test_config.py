from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import KEP, kep_env

from tuiapp.project import config as project_config
from tuiapp.security import secrets
from tuiapp.settings import config_types, config_writer


def write(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_project_overrides_user_and_rules_are_ordered(tmp_path: Path) -> None:
    user = write(
        tmp_path / "user.toml",
        """
model = "openai/gpt-5-mini"
theme = "light"
[[approval.rules]]
tool = "execcmd"
action = "deny"
[tools]
timeout = 12
""",
    )
    root = tmp_path / "p"
    write(
        root / "kep.toml",
        """
model = "offline"
[[approval.rules]]
tool = "execcmd"
args = "ls"
action = "allow"
[tools.timeouts]
slow = 90
""",
    )
    cfg = project_config.load(root, user_file=user)
    assert cfg.model == "offline" and cfg.theme == "light"
    assert [r.action for r in cfg.approval.rules] == ["allow", "deny"]  # project first
    assert cfg.tools.timeout_for("slow") == 90 and cfg.tools.timeout_for("x") == 12
    assert cfg.files == (user, root / "kep.toml")


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ("[tools]\ntimeout = 'soon'\n", "tools.timeout", "expected a number"),
        (
            "[[approval.rules]]\ntool = '('\naction = 'allow'\n",
            "approval.rules[1].tool",
            "invalid regex",
        ),
        (
            "[[approval.rules]]\ntool = 'x'\naction = 'maybe'\n",
            "approval.rules[1].action",
            "one of",
        ),
        ("[providers.mine]\nbase_url = 'http://x'\n", "providers.mine.api", "required"),
        ("model = \n", "", "not valid TOML"),
    ],
)
def test_invalid_config_names_file_and_key(
    tmp_path: Path, text: str, key: str, fragment: str
) -> None:
    root = tmp_path / "p"
    f = write(root / "kep.toml", text)
    with pytest.raises(config_types.ConfigError) as err:
        project_config.load(root, user_file=tmp_path / "none.toml")
    assert err.value.file == str(f) and err.value.key == key and fragment in err.value.message


def test_add_rule_is_atomic_and_first(tmp_path: Path) -> None:
    f = write(
        tmp_path / "kep.toml", 'model = "offline"\n[[approval.rules]]\ntool = "a"\naction = "ask"\n'
    )
    config_writer.add_rule(f, "^shout$", "allow")
    cfg = project_config.load(tmp_path, user_file=tmp_path / "none.toml")
    assert [(r.tool, r.action) for r in cfg.approval.rules] == [("^shout$", "allow"), ("a", "ask")]
    assert cfg.model == "offline"
    assert not list(tmp_path.glob(".kep.toml.*"))  # no temp file left behind


def test_masked_hides_secrets_but_not_env_names() -> None:
    data = {
        "providers": {"x": {"api_key_env": "X_KEY", "headers": {"Authorization": "Bearer s3cret"}}}
    }
    shown = secrets.mask_config(data)
    assert shown["providers"]["x"]["api_key_env"] == "X_KEY"
    assert shown["providers"]["x"]["headers"]["Authorization"] == "****"


def test_project_root_is_nearest_ancestor(tmp_path: Path) -> None:
    from tuiapp.settings.paths import find_project_root

    (tmp_path / "a" / "prompts").mkdir(parents=True)
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    assert find_project_root(deep) == (tmp_path / "a").resolve()


def test_cli_config_show_masks_and_bad_file_exits_2(tmp_path: Path) -> None:
    root = tmp_path / "p"
    write(
        root / "kep.toml",
        '[providers.corp]\napi = "chat"\nbase_url = "http://127.0.0.1:9"\n'
        '[providers.corp.headers]\nX-Api-Key = "topsecret"\n',
    )
    env = kep_env(CORP_KEY="zzz")
    out = subprocess.run(
        [*KEP, "config", "show", "--project", str(root)], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr
    assert "topsecret" not in out.stdout and "****" in out.stdout
    write(root / "kep.toml", "[tools]\ntimeout = -1\n")
    out = subprocess.run(
        [*KEP, "config", "show", "--project", str(root)], capture_output=True, text=True, env=env
    )
    assert out.returncode == 2
    assert "kep.toml: tools.timeout: must be positive" in out.stderr
    assert "Traceback" not in out.stderr


def test_version_and_help() -> None:
    out = subprocess.run([*KEP, "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip().startswith("kep ")
    out = subprocess.run([*KEP, "--help"], capture_output=True, text=True, check=True)
    for sub in ("run", "functions", "call", "mcp", "sessions", "config", "init"):
        assert sub in out.stdout
    assert sys.executable


def test_unknown_keys_warn_with_the_closest_known_key(tmp_path: Path) -> None:
    root = tmp_path / "p"
    write(
        root / "kep.toml",
        '[tools]\ntimeuot = 3\ntimeout = 9\n[ui]\n"pane\\tlines" = 1\n'
        '[[approval.rules]]\ntool = "x"\naction = "deny"\nargz = "rm"\n'
        '[providers.corp]\napi = "chat"\nbase_ur = "http://127.0.0.1:9"\n'
        "[mcp.servers.s]\ncommand = \"true\"\nstartup_timout = 3\n",
    )
    cfg = project_config.load(root, user_file=tmp_path / "none.toml")
    assert cfg.tools.timeout == 9  # the rest still applies
    text = "\n".join(cfg.warnings)
    assert "unknown key `tools.timeuot` (ignored); did you mean `timeout`?" in text
    assert "`approval.rules[1].argz`" in text and "did you mean `args`?" in text
    assert "`providers.corp.base_ur`" in text and "`mcp.servers.s.startup_timout`" in text
    assert "`ui.pane\tlines`" in text  # shown, and a hostile key name costs nothing more
    assert all(line.startswith(str(root / "kep.toml")) for line in cfg.warnings)
    assert len(cfg.warnings) == 5
    out = subprocess.run([*KEP, "config", "show", "--project", str(root)],
                         capture_output=True, text=True, env=kep_env())
    assert out.returncode == 0
    assert "kep: warning: " in out.stderr and "did you mean `timeout`?" in out.stderr


def test_known_keys_do_not_warn(tmp_path: Path) -> None:
    root = tmp_path / "p"
    write(root / "kep.toml", '[tools]\ntimeout = 3\n[tools.timeouts]\nanything = 2\n'
          '[providers.corp]\napi = "chat"\n[providers.corp.headers]\nX-Any = "v"\n')
    assert project_config.load(root, user_file=tmp_path / "none.toml").warnings == ()


def test_config_path_prints_every_directory(tmp_path: Path) -> None:
    out = subprocess.run([*KEP, "config", "path", "--project", str(tmp_path)],
                         capture_output=True, text=True, env=kep_env())
    assert out.returncode == 0
    for label in ("user config:", "project config:", "user themes:", "data (sessions, spool):",
                  "cache (tool declarations):"):
        assert label in out.stdout
    from tuiapp.settings import paths

    assert str(paths.data_dir()) in out.stdout and str(paths.cache_dir()) in out.stdout


def test_kep_own_write_is_not_announced_as_a_reload(tmp_path: Path) -> None:
    f = tmp_path / "kep.toml"
    config_writer.add_rule(f, "^x$", "deny")
    assert config_writer.written_by_kep((f,))
    f.write_text(f.read_text() + "\n# the user's edit\n")
    assert not config_writer.written_by_kep((f,))


def test_add_rule_writes_array_of_tables_as_the_readme_shows(tmp_path: Path) -> None:
    f = write(tmp_path / "kep.toml", '[approval]\ndefault = "ask"\n\n[tools]\ntimeout = 5\n'
              '[[approval.rules]]\ntool = "a"\nargs = \'rm\\s+-rf\'\naction = "deny"\n')
    config_writer.add_rule(f, "^execcmd$", "allow")
    text = f.read_text()
    assert "rules = [" not in text and text.count("[[approval.rules]]") == 2
    cfg = project_config.load(tmp_path, user_file=tmp_path / "none.toml")
    assert [(r.tool, r.action, r.args) for r in cfg.approval.rules] == [
        ("^execcmd$", "allow", None), ("a", "deny", r"rm\s+-rf")]
    assert cfg.tools.timeout == 5 and cfg.approval.default == "ask"


def test_add_rule_to_a_new_file_and_odd_strings_round_trip(tmp_path: Path) -> None:
    f = tmp_path / "kep.toml"
    odd = "^we\"ird\ttool\\name'$"
    config_writer.add_rule(f, odd, "deny", args_regex="a\nb")
    cfg = project_config.load(tmp_path, user_file=tmp_path / "none.toml")
    assert [(r.tool, r.args) for r in cfg.approval.rules] == [(odd, "a\nb")]


def test_add_rule_keeps_the_file_mode(tmp_path: Path) -> None:
    f = write(tmp_path / "kep.toml", 'model = "offline"\n')
    f.chmod(0o640)
    config_writer.add_rule(f, "^x$", "allow")
    assert f.stat().st_mode & 0o777 == 0o640


def test_add_rule_writes_through_a_symlink(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    target = write(dotfiles / "kep.toml", 'model = "offline"\n')
    target.chmod(0o600)
    proj = tmp_path / "proj"
    proj.mkdir()
    link = proj / "kep.toml"
    link.symlink_to(target)
    config_writer.add_rule(link, "^x$", "allow")
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert "[[approval.rules]]" in target.read_text()
    assert target.stat().st_mode & 0o777 == 0o600
    assert not list(proj.glob(".kep.toml*")) and not list(dotfiles.glob(".kep.toml.*"))


def test_add_rule_refuses_a_dangling_symlink(tmp_path: Path) -> None:
    link = tmp_path / "kep.toml"
    link.symlink_to(tmp_path / "nowhere" / "kep.toml")
    with pytest.raises(config_types.ConfigError, match="dangling symlink"):
        config_writer.add_rule(link, "^x$", "allow")
    assert link.is_symlink() and not (tmp_path / "nowhere").exists()


def test_saving_a_theme_keeps_rules_as_tables(tmp_path: Path) -> None:
    f = write(tmp_path / "kep.toml", '[[approval.rules]]\ntool = "a"\naction = "ask"\n')
    config_writer.set_value(f, "theme", "light")
    text = f.read_text()
    assert "[[approval.rules]]" in text and "rules = [" not in text
    cfg = project_config.load(tmp_path, user_file=tmp_path / "none.toml")
    assert cfg.theme == "light" and [r.tool for r in cfg.approval.rules] == ["a"]


def test_add_rule_to_a_file_that_is_not_utf8_is_one_clear_error(tmp_path: Path) -> None:
    f = tmp_path / "kep.toml"
    f.write_bytes(b'model = "\xff\xfe"\n')
    with pytest.raises(config_types.ConfigError, match="not valid UTF-8 at line 1, column 10"):
        config_writer.add_rule(f, "^x$", "allow")
    assert f.read_bytes() == b'model = "\xff\xfe"\n'  # nothing lost
