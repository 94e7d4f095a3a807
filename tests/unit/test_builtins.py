"""kep's built-in functions, run as real executables in a project (cwd = project root)."""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tuiapp.settings import paths
from tuiapp.tools.formats.keprompt import KepromptFormat, parse_definitions

BUILTINS = paths.builtin_functions_dir()


def call(
    project: Path, exe: str, name: str, args: dict | str, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run a built-in the way the runner does (through its own interpreter: no shim delay)."""
    stdin = args if isinstance(args, str) else json.dumps(args)
    full_env = {k: v for k, v in os.environ.items() if k != "KEP_ALLOW_OUTSIDE_ROOT"} | env
    return subprocess.run(
        [sys.executable, str(BUILTINS / exe), name],
        input=stdin,
        text=True,
        capture_output=True,
        cwd=project,
        env=full_env,
        timeout=30,
    )


def ok(project: Path, exe: str, name: str, args: dict, **env: str) -> str:
    res = call(project, exe, name, args, **env)
    assert res.returncode == 0, res.stderr
    return res.stdout


def refused(project: Path, exe: str, name: str, args: dict) -> str:
    res = call(project, exe, name, args)
    assert res.returncode == 1 and res.stdout == ""
    assert "outside the project root" in res.stderr
    return res.stderr


def test_each_builtin_declares_valid_functions_and_answers_version() -> None:
    names = {}
    for exe in KepromptFormat().candidates(BUILTINS):
        assert os.access(exe, os.X_OK) and exe.read_text().startswith("#!/usr/bin/env python3\n")
        out = subprocess.run(
            [sys.executable, str(exe), "--list-functions"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        names[exe.name] = [d["name"] for d in parse_definitions(out)]
        version = subprocess.run(
            [sys.executable, str(exe), "--version"], capture_output=True, text=True, check=True
        )
        assert version.stdout.startswith("kep built-in functions")
    assert names == {
        "files": ["readfile", "writefile", "editfile", "write_base64_file", "listdir", "grep"],
        "shell": ["execcmd"],
        "web": ["wwwget"],
    }
    # The shared helper module is not a tool and writes no bytecode beside the tools.
    assert not (BUILTINS / "__pycache__").exists()
    assert not os.access(BUILTINS / "kep_builtins.py", os.X_OK)


def test_readfile_whole_and_byte_ranges(project: Path) -> None:
    (project / "notes.txt").write_text("héllo\nworld\n")
    assert ok(project, "files", "readfile", {"filename": "notes.txt"}) == "héllo\nworld\n"
    assert (
        ok(project, "files", "readfile", {"filename": "notes.txt", "offset": 7, "length": 5})
        == "world\n"
    )
    res = call(project, "files", "readfile", {"filename": "prompts"})
    assert res.returncode == 1 and "is a directory" in res.stderr
    (project / "bin.dat").write_bytes(b"\0\1\2")
    assert "looks binary" in call(project, "files", "readfile", {"filename": "bin.dat"}).stderr


def test_path_traversal_is_refused(project: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    (project / "link_out").symlink_to(secret)
    (project / "dir_out").symlink_to(tmp_path)
    for name in (
        "../secret.txt",
        str(secret),
        "link_out",
        "dir_out/secret.txt",
        "sub/../../secret.txt",
    ):
        refused(project, "files", "readfile", {"filename": name})
    for name in ("../new.txt", str(tmp_path / "new.txt"), "link_out", "dir_out/new.txt"):
        refused(project, "files", "writefile", {"filename": name, "content": "pwned"})
    assert secret.read_text() == "top secret" and not (tmp_path / "new.txt").exists()
    refused(project, "files", "listdir", {"path": ".."})
    refused(project, "files", "grep", {"pattern": "secret", "path": "dir_out"})
    # Config can allow it (the runner sets this variable from [tools] allow_outside_root).
    assert (
        ok(project, "files", "readfile", {"filename": "link_out"}, KEP_ALLOW_OUTSIDE_ROOT="1")
        == "top secret\n"
    )
    # A symlink that stays inside the project is fine.
    (project / "inner.txt").write_text("in")
    (project / "link_in").symlink_to(project / "inner.txt")
    assert ok(project, "files", "readfile", {"filename": "link_in"}) == "in\n"


def test_writefile_creates_parents_and_replaces(project: Path) -> None:
    assert (
        ok(project, "files", "writefile", {"filename": "a/b/c.txt", "content": "one"})
        == "created a/b/c.txt (3 bytes)\n"
    )
    assert (
        ok(project, "files", "writefile", {"filename": "a/b/c.txt", "content": "two!"})
        == "overwrote a/b/c.txt (4 bytes)\n"
    )
    assert (project / "a/b/c.txt").read_text() == "two!"
    ok(project, "files", "write_base64_file", {"filename": "x.bin", "base64_str": "AAEC"})
    assert (project / "x.bin").read_bytes() == b"\0\1\2"


def test_listdir_and_glob(project: Path) -> None:
    (project / "src" / "pkg").mkdir(parents=True)
    (project / "src" / "main.py").write_text("")
    (project / "src" / "pkg" / "mod.py").write_text("")
    (project / "src" / "notes.md").write_text("")
    (project / ".git").mkdir()
    (project / ".git" / "x.py").write_text("")
    assert (
        ok(project, "files", "listdir", {"path": "src"}) == "src/main.py\nsrc/notes.md\nsrc/pkg/\n"
    )
    assert (
        ok(project, "files", "listdir", {"pattern": "*.py", "recursive": True})
        == "src/main.py\nsrc/pkg/mod.py\n"
    )
    assert "no entries" in ok(project, "files", "listdir", {"path": "src", "pattern": "*.rs"})


def test_grep(project: Path) -> None:
    (project / "a.py").write_text("import os\ndef main():\n    return os.name\n")
    (project / "b.txt").write_text("os is here too\n")
    assert (
        ok(project, "files", "grep", {"pattern": r"\bos\b", "glob": "*.py"})
        == "a.py:1: import os\na.py:3:     return os.name\n"
    )
    out = ok(project, "files", "grep", {"pattern": "OS", "ignore_case": True, "max_results": 1})
    assert out.splitlines() == ["a.py:1: import os", "[grep: stopped at 1 matches]"]
    res = call(project, "files", "grep", {"pattern": "("})
    assert res.returncode == 1 and "invalid regular expression" in res.stderr


def test_protocol_errors_are_exit_2(project: Path) -> None:
    assert call(project, "files", "readfile", "{not json").returncode == 2
    res = call(project, "files", "readfile", {"filename": "x", "bogus": 1})
    assert res.returncode == 2 and "unknown argument(s) bogus" in res.stderr
    assert call(project, "files", "nosuchfunction", {}).returncode == 2


def test_execcmd_streams_and_keeps_the_exit_code(project: Path) -> None:
    res = call(project, "shell", "execcmd", {"cmd": "pwd; echo oops >&2; exit 7"})
    assert (res.returncode, res.stdout, res.stderr) == (7, f"{project}\n", "oops\n")


@pytest.fixture
def web_server() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = (
                b"<html><head><title>t</title><script>var x;</script></head><body>"
                b"<h1>Hello</h1><p>kep <a href='https://example.org/'>link</a></p></body></html>"
            )
            self.send_response(200 if self.path == "/" else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_wwwget_turns_html_into_text(project: Path, web_server: str) -> None:
    assert (
        ok(project, "web", "wwwget", {"url": web_server + "/"})
        == "Hello\n\nkep link <https://example.org/>\n"
    )
    res = call(project, "web", "wwwget", {"url": web_server + "/missing"})
    assert res.returncode == 1 and "HTTP 404" in res.stderr


def test_wwwget_says_clearly_when_it_cannot_reach_the_host(project: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = call(project, "web", "wwwget", {"url": f"http://127.0.0.1:{port}/"})
    assert res.returncode == 1
    assert res.stderr.startswith(f"Error: cannot reach http://127.0.0.1:{port}/:")
    assert "offline" in res.stderr
    assert (
        "http:// or https://"
        in call(project, "web", "wwwget", {"url": "file:///etc/passwd"}).stderr
    )
