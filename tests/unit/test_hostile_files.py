"""Config files that are not files: a FIFO, a device, a dangling link, a 2 MB key. Each is one
clear line and exit 2 (or one short warning) within seconds; kep never blocks reading one."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import KEP, kep_env

BOUND = 15  # seconds: a hang would otherwise wait for ever on the FIFO


def kep(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KEP, *argv], capture_output=True, text=True, env=kep_env(),
                          cwd=cwd, timeout=BOUND, stdin=subprocess.DEVNULL)


def one_clean_line(res: subprocess.CompletedProcess[str], *needles: str) -> None:
    out = res.stderr
    assert res.returncode == 2, (res.returncode, out)
    assert "Traceback" not in out and out.count("\n") == 1, out
    for n in needles:
        assert n in out, out


@pytest.mark.parametrize("command", [("functions",), ("run", "hi")])
def test_a_fifo_kep_toml_is_refused_not_waited_on(project: Path, command: tuple[str, ...]) -> None:
    os.mkfifo(project / "kep.toml")
    one_clean_line(kep(*command, cwd=project), "kep.toml", "not a regular file")


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_kep_toml_linked_to_an_endless_device_is_refused(project: Path, device: str) -> None:
    (project / "kep.toml").symlink_to(device)
    one_clean_line(kep("functions", cwd=project), "kep.toml", "not a regular file")


def test_a_fifo_user_config_is_refused(project: Path) -> None:
    from tuiapp.settings import paths

    user = paths.user_config_file()
    user.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(user)
    one_clean_line(kep("functions", cwd=project), str(user), "not a regular file")


def test_a_dangling_kep_toml_link_is_named_not_ignored(project: Path) -> None:
    (project / "kep.toml").symlink_to(project / "moved-away.toml")
    one_clean_line(kep("functions", cwd=project), "kep.toml", "dangling")


def test_a_kep_toml_directory_is_one_line(project: Path) -> None:
    (project / "kep.toml").mkdir()
    one_clean_line(kep("functions", cwd=project), "kep.toml", "a directory")


@pytest.mark.slow
def test_a_2_mb_unknown_key_is_a_short_warning(project: Path) -> None:
    (project / "kep.toml").write_text("[tools]\nbuiltins = false\n" + "k" * 2_000_000 + " = 1\n")
    res = kep("functions", cwd=project)
    assert res.returncode == 0, res.stderr
    warning = [line for line in res.stderr.splitlines() if "unknown key" in line]
    assert len(warning) == 1 and len(warning[0]) < 400, len(res.stderr)


def test_escape_sequences_in_config_keys_never_reach_the_terminal(project: Path) -> None:
    (project / "kep.toml").write_text('"\\u001b]2;PWNED\\u0007" = 1\n'
                                      '[providers."\\u001b]52;c;aGk=\\u0007"]\napi = 5\n')
    res = kep("functions", cwd=project)
    assert res.returncode == 2 and "\x1b" not in res.stderr and "\x07" not in res.stderr
    assert "expected a string" in res.stderr


def test_dotenv_with_a_nul_byte_is_one_line(project: Path) -> None:
    (project / ".env").write_bytes(b"GOOD=1\nA=x\0y\n")
    one_clean_line(kep("functions", cwd=project), ".env", "NUL byte at line 2")


@pytest.mark.parametrize("body", ["V=" + "x" * 50_000_000 + "\n",
                                  "".join(f"V{i}=1\n" for i in range(20_000))],
                         ids=["50 MB value", "20,000 lines"])
def test_a_huge_dotenv_is_refused_quickly(project: Path, body: str) -> None:
    (project / ".env").write_text(body)
    one_clean_line(kep("functions", cwd=project), ".env", "too")


def test_500_dotenv_variables_load_cleanly(project: Path) -> None:
    (project / ".env").write_text("".join(f"V{i}=value{i}\n" for i in range(500)))
    res = kep("functions", cwd=project)
    assert res.returncode == 0 and res.stderr == "", res.stderr


@pytest.mark.parametrize("kind", ["fifo", "invalid utf-8"])
def test_an_agents_tools_txt_that_is_a_fifo_or_not_utf8_does_not_stop_it(project: Path,
                                                                         kind: str) -> None:
    agent = project / "agents" / "helper"
    agent.mkdir(parents=True)
    (agent / "index.yaml").write_text("name: helper\ninstructions: be brief\n")
    if kind == "fifo":
        os.mkfifo(agent / "tools.txt")
    else:
        (agent / "tools.txt").write_bytes(b"fs_cat.sh\n\xff\xfe.sh\n")
    res = kep("run", "--agent", "helper", "hi", cwd=project)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    assert "offline" in res.stdout


DEEP = "[" * 100_000 + "]" * 100_000  # deeper than the JSON parser's stack


def test_tool_call_arguments_nested_100k_deep_are_an_answer_to_the_model(project: Path) -> None:
    (project / "kep.toml").write_text('[[approval.rules]]\ntool = "readfile"\naction = "allow"\n')
    res = subprocess.run([*KEP, "run", "--yes"], cwd=project, env=kep_env(), text=True,
                         capture_output=True, timeout=BOUND,
                         input=f'readfile {{"filename": {DEEP}}}')
    assert "Traceback" not in res.stderr, res.stderr[-500:]
    assert "nested too deeply" in res.stdout


def test_kep_call_arguments_nested_100k_deep_are_one_line(project: Path) -> None:
    deep = "[" * 5000 + "]" * 5000  # an argument of 10 KB, deeper than the parser's stack
    one_clean_line(kep("call", "readfile", deep, cwd=project), "nested too deeply")


@pytest.mark.slow
def test_an_mcp_json_nested_100k_deep_is_a_broken_entry(project: Path) -> None:
    (project / "mcp.json").write_text('{"mcpServers": ' + '{"a": ' * 100_000 + "1"
                                      + "}" * 100_000 + "}")
    res = kep("functions", cwd=project)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-500:]
    assert "mcp.json: nested too deeply" in res.stdout


def test_edited_arguments_nested_too_deeply_are_a_problem_not_a_crash() -> None:
    from tuiapp.ui.widgets.approval_editor import parse_arguments

    problem, value = parse_arguments('{"a": ' + DEEP + "}", {"type": "object"})
    assert problem == "nested too deeply" and value == {}
