"""The one reader of files a checkout controls, as a hostile checkout meets it.

An untrusted checkout whose kep.toml, mcp.json or Loki config.yaml is a link to /dev/zero, a
FIFO, a directory, 100,000 levels deep or not UTF-8: every command says one clear line (or
goes on without that file), never reads until memory runs out and never shows a traceback;
all of it before any trust question.
"""

from __future__ import annotations

import os
import resource
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import KEP, kep_env

from tuiapp.security import project_files
from tuiapp.security.project_files import ProjectFileError

BOUND = 30  # seconds: a FIFO read would otherwise wait for ever
MEMORY = 1 << 30  # 1 GB of address space above what kep needs: /dev/zero read whole exceeds it


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cloned checkout nobody has trusted (a fresh trust state)."""
    monkeypatch.setenv("KEP_STATE_DIR", str(tmp_path / "fresh-state"))
    root = tmp_path / "cloned"
    (root / "prompts" / "functions").mkdir(parents=True)
    return root


def _limit_memory() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    want = 4 * MEMORY  # kep with its imports fits well within 4 GB of address space
    if hard == resource.RLIM_INFINITY or hard > want:
        resource.setrlimit(resource.RLIMIT_AS, (want, hard))


def kep(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KEP, *argv], capture_output=True, text=True, env=kep_env(),
                          cwd=cwd, timeout=BOUND, stdin=subprocess.DEVNULL,
                          preexec_fn=_limit_memory)


COMMANDS = [("functions",), ("run", "--model", "offline", "hi"), ("config",), ("trust",),
            ("mcp", "list")]
# Every command reads the project through the one reader: the whole matrix (a kep process
# each) runs with the slow tests; the README's command tries each hostile file on the first
# command and each command on the deepest files.
MATRIX_COMMANDS = [pytest.param(c, marks=() if i == 0 else pytest.mark.slow)
                   for i, c in enumerate(COMMANDS)]


def no_traceback(res: subprocess.CompletedProcess[str], *needles: str) -> None:
    out = res.stdout + res.stderr
    assert "Traceback" not in out and "MemoryError" not in out, out[-2000:]
    assert "RecursionError" not in out, out[-2000:]
    for n in needles:
        assert n in out, out[-2000:]


def _zero(root: Path, name: str) -> None:
    target = root / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to("/dev/zero")


def _fifo(root: Path, name: str) -> None:
    target = root / name
    target.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(target)


def _deep_toml(root: Path, name: str) -> None:
    (root / name).write_text("a = " + "[" * 3000 + "]" * 3000 + "\n")


def _deep_json(root: Path, name: str) -> None:
    (root / name).write_text('{"mcpServers": ' + "[" * 100_000 + "]" * 100_000 + "}")


def _bad_utf8(root: Path, name: str) -> None:
    (root / name).write_bytes(b"# \xff\xfe not text\n")


def _directory(root: Path, name: str) -> None:
    (root / name).mkdir(parents=True)


def _long_line(root: Path, name: str) -> None:
    (root / name).write_text("# " + "x" * 2_000_000 + "\n")


def _link_out(root: Path, name: str) -> None:
    outside = root.parent / f"outside-{name}"
    outside.write_text("# outside\n")
    (root / name).symlink_to(outside)


HOSTILE: dict[str, Callable[[Path, str], None]] = {
    "a /dev/zero link": _zero, "a FIFO": _fifo, "invalid UTF-8": _bad_utf8,
    "a directory": _directory, "a 2 MB line": _long_line, "a link out of the root": _link_out,
}


@pytest.mark.parametrize("command", MATRIX_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("name", ["kep.toml", "mcp.json", "config.yaml"])
@pytest.mark.parametrize("kind", list(HOSTILE))
def test_a_hostile_config_file_in_an_untrusted_checkout_is_one_line(
        checkout: Path, command: tuple[str, ...], name: str, kind: str) -> None:
    HOSTILE[kind](checkout, name)
    res = kep(*command, cwd=checkout)
    no_traceback(res)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_3000_deep_kep_toml_in_an_untrusted_checkout_is_one_line(
        checkout: Path, command: tuple[str, ...]) -> None:
    _deep_toml(checkout, "kep.toml")
    no_traceback(kep(*command, cwd=checkout))


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_100000_deep_mcp_json_in_an_untrusted_checkout_is_one_line(
        checkout: Path, command: tuple[str, ...]) -> None:
    _deep_json(checkout, "mcp.json")
    no_traceback(kep(*command, cwd=checkout))


# ---- the reader itself: every hostile shape is one ProjectFileError ---------------------------


def _reason(path: Path, reader: Callable[[Path], object] = project_files.read_text) -> str:
    with pytest.raises(ProjectFileError) as e:
        reader(path)
    assert "\n" not in str(e.value)
    return e.value.reason


def test_special_files_are_refused_without_reading(tmp_path: Path) -> None:
    (tmp_path / "zero").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    import socket

    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    try:
        assert "a device" in _reason(tmp_path / "zero")
        assert "a FIFO" in _reason(tmp_path / "fifo")
        assert "a directory" in _reason(tmp_path / "dir")
        with pytest.raises(ProjectFileError, match=r"cannot read|a socket"):
            project_files.read_text(tmp_path / "sock")
    finally:
        sock.close()


def test_a_file_over_the_cap_is_refused_and_a_missing_one_is_none(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * (2 * 1024 * 1024 + 1))  # a 2 MB line
    assert "too big" in _reason(big, lambda p: project_files.read_bytes(p, 2 * 1024 * 1024))
    assert project_files.read_bytes(big, 3 * 1024 * 1024) == b"x" * (2 * 1024 * 1024 + 1)
    assert project_files.read_text(tmp_path / "absent") is None


def test_invalid_utf8_names_line_and_column(tmp_path: Path) -> None:
    f = tmp_path / "bad"
    f.write_bytes(b"ok\nab\xffc\n")
    assert _reason(f) == "not valid UTF-8 at line 2, column 3 (byte 5)"


@pytest.mark.parametrize("reader,text", [
    (project_files.read_toml, "a = " + "[" * 100_000 + "]" * 100_000),
    (project_files.read_toml, "".join(f"[{'a.' * 70}b]\n")),
    (project_files.read_json, "[" * 100_000 + "]" * 100_000),
    (project_files.read_json, '{"a":' * 100_000 + "1" + "}" * 100_000),
    (project_files.read_yaml, "[" * 100_000 + "]" * 100_000),
    (project_files.read_yaml, "- " * 5_000 + "x\n"),
])
def test_deep_nesting_is_one_line_never_a_recursion_error(
        tmp_path: Path, reader: Callable[[Path], object], text: str) -> None:
    f = tmp_path / "deep"
    f.write_text(text)
    assert "nested too deeply" in _reason(f, reader)


def test_a_yaml_error_does_not_quote_the_file(tmp_path: Path) -> None:
    f = tmp_path / "config.yaml"
    f.write_text("key: [unclosed\nSECRET_VALUE_xyz: 1\n")
    reason = _reason(f, project_files.read_yaml)
    assert reason.startswith("not valid YAML") and "SECRET_VALUE_xyz" not in reason


# ---- confinement: what a .prompt include or an agent document may read ------------------------


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "proj"
    r.mkdir()
    (r / "notes.md").write_text("notes\n")
    (r / ".env").write_text("OPENAI_API_KEY=sk-secret-value-1234567890\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    return r


def test_confined_reads_inside_the_root(root: Path) -> None:
    assert project_files.read_text(root / "notes.md", confine=root) == "notes\n"


@pytest.mark.parametrize("name", [".env", "sub/../.env", ".env.local"])
def test_a_dotenv_is_refused_with_the_reason(root: Path, name: str) -> None:
    (root / ".env.local").write_text("K=v\n")
    reason = _reason(root / name, lambda p: project_files.read_text(p, confine=root))
    assert "hidden" in reason


def test_a_link_to_dotenv_is_refused(root: Path) -> None:
    (root / "innocent.txt").symlink_to(root / ".env")
    assert "hidden" in _reason(root / "innocent.txt",
                               lambda p: project_files.read_text(p, confine=root))


def test_a_hard_link_to_dotenv_is_refused(root: Path) -> None:
    os.link(root / ".env", root / "innocent.txt")
    assert "hard link" in _reason(root / "innocent.txt",
                                  lambda p: project_files.read_text(p, confine=root))


@pytest.mark.parametrize("name", ["../outside.txt", "link-out"])
def test_outside_the_root_is_refused(root: Path, name: str) -> None:
    (root / "link-out").symlink_to(root.parent / "outside.txt")
    assert "outside the project" in _reason(
        root / name, lambda p: project_files.read_text(p, confine=root))


def test_the_home_ssh_key_is_refused(root: Path) -> None:
    key = Path(os.path.expanduser("~/.ssh/id_rsa"))
    assert "outside the project" in _reason(key, lambda p: project_files.read_text(p, confine=root))


# ---- kep new: never writes through a checkout's link out of the project -----------------------


@pytest.mark.parametrize("linked", ["prompts/functions", "prompts"])
def test_kep_new_does_not_write_through_a_linked_folder(tmp_path: Path, linked: str) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "kep.toml").write_text("")
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / linked).parent.mkdir(parents=True, exist_ok=True)
    (root / linked).symlink_to(outside)
    res = subprocess.run([*KEP, "--project", str(root), "new", "mytool"], capture_output=True,
                         text=True, env=kep_env(), timeout=BOUND, stdin=subprocess.DEVNULL)
    assert res.returncode == 2 and "outside the project" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    assert list(outside.rglob("*")) == []


# ---- Loki config: read once trusted, but never read whole ---------------------------------------


@pytest.mark.slow
def test_a_loki_config_yaml_linked_to_dev_zero_is_never_read_whole(checkout: Path) -> None:
    (checkout / "functions" / "tools").mkdir(parents=True)
    (checkout / "functions" / "tools" / "hi.py").write_text(
        'def run(x: str):\n    """Say hi."""\n    return x\n')
    (checkout / "agents" / "a").mkdir(parents=True)
    for name in ("functions/config.yaml", "agents/a/config.yaml", "config.yaml"):
        _zero(checkout, name)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    for command in (("--trust", "functions"), ("--trust", "--agent", "a", "run", "--model",
                                                "offline", "hi")):
        no_traceback(kep(*command, cwd=checkout))
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB, the largest child
    # (the largest child of this worker so far: unchanged means none of these went higher)
    assert peak == before or peak < 600 * 1024, f"a child peaked at {peak // 1024} MB"
