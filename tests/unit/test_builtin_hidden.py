"""kep's file built-ins and hidden files: a `.env` key never comes back from readfile (whatever
the offset: redaction only knows whole values), grep or a link; reads are bounded whatever
`length` asks; kep passes its hidden list to the built-ins."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from test_builtins import BUILTINS, call, ok
from tools_testutil import make_config

from tuiapp.tools.runner import Runner
from tuiapp.vocab.messages import ToolCall
from tuiapp.vocab.tool_specs import ToolSpec

KEY = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


@pytest.fixture
def keyed(project: Path) -> Path:
    (project / ".env").write_text(f"OPENAI_API_KEY={KEY}\n")
    (project / "notes.txt").write_text("nothing secret\n")
    return project


def refused(project: Path, name: str, args: dict, **env: str) -> str:
    res = call(project, "files", name, args, **env)
    assert res.returncode == 1 and res.stdout == "", (res.stdout, res.stderr)
    assert KEY[4:16] not in res.stderr
    return res.stderr


@pytest.mark.parametrize("offset,length", [(None, None), (16, None), (16, 8), (0, 20)])
def test_readfile_refuses_dotenv_whatever_the_range(keyed: Path, offset: int | None,
                                                    length: int | None) -> None:
    args: dict = {"filename": ".env"}
    if offset is not None:
        args["offset"] = offset
    if length is not None:
        args["length"] = length
    assert ".env" in refused(keyed, "readfile", args)


@pytest.mark.parametrize("name", [".env.local", "sub/.env", "./sub/../.env"])
def test_readfile_refuses_dotenv_variants(keyed: Path, name: str) -> None:
    (keyed / "sub").mkdir()
    (keyed / "sub" / ".env").write_text(f"K={KEY}\n")
    (keyed / ".env.local").write_text(f"K={KEY}\n")
    refused(keyed, "readfile", {"filename": name})


def test_a_symlink_to_dotenv_is_refused(keyed: Path) -> None:
    (keyed / "innocent.md").symlink_to(keyed / ".env")
    refused(keyed, "readfile", {"filename": "innocent.md", "offset": 16})


def test_a_hard_link_to_dotenv_is_refused(keyed: Path) -> None:
    os.link(keyed / ".env", keyed / "innocent.md")
    assert "hard link" in refused(keyed, "readfile", {"filename": "innocent.md", "offset": 16})
    out = ok(keyed, "files", "grep", {"pattern": "sk-proj"})
    assert KEY not in out


def test_grep_never_searches_dotenv(keyed: Path) -> None:
    out = ok(keyed, "files", "grep", {"pattern": "sk-proj", "glob": "*"})
    assert KEY not in out and "no matches" in out
    refused(keyed, "grep", {"pattern": "sk", "path": ".env"})


def test_writefile_refuses_dotenv(keyed: Path) -> None:
    refused(keyed, "writefile", {"filename": ".env", "content": "LLM_MCP_SKIP_CONFIRM=1\n"})
    assert (keyed / ".env").read_text() == f"OPENAI_API_KEY={KEY}\n"


def test_hidden_paths_from_kep_are_refused_even_outside_allowed(keyed: Path,
                                                                 tmp_path: Path) -> None:
    secret = tmp_path / "creds" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text("PRIVATE KEY\n")
    res = call(keyed, "files", "readfile", {"filename": str(secret)},
               KEP_ALLOW_OUTSIDE_ROOT="1", KEP_HIDDEN_PATHS=str(secret.parent))
    assert res.returncode == 1 and "hidden" in res.stderr and "PRIVATE" not in res.stdout


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (768 << 20, resource.getrlimit(resource.RLIMIT_AS)[1]))


def test_a_1_gb_length_is_capped_and_said(project: Path) -> None:
    (project / "big.txt").write_bytes(b"line\n" * (2 << 20))  # 10 MiB
    res = subprocess.run([sys.executable, str(BUILTINS / "files"), "readfile"],
                         input='{"filename": "big.txt", "length": 1073741824}', text=True,
                         capture_output=True, cwd=project, timeout=30, preexec_fn=_limit)
    assert res.returncode == 0, res.stderr[-500:]
    assert len(res.stdout) < (5 << 20)
    assert "length capped at 4 MiB" in res.stdout and "use offset=4194304" in res.stdout


async def test_kep_passes_its_hidden_list_to_the_built_ins(keyed: Path) -> None:
    """Through the runner: the user's credential folders are refused though
    allow_outside_root is on."""
    ssh = Path(os.path.expanduser("~")) / ".ssh"
    ssh.mkdir(exist_ok=True)
    (ssh / "id_rsa").write_text("PRIVATE KEY\n")
    exe = str(BUILTINS / "files")
    spec = ToolSpec("readfile", "", {"type": "object"}, "keprompt", exe,
                    run={"exe": exe, "function": "readfile"})
    fin = await Runner(make_config(keyed, allow_outside_root=True),
                       spool_dir=keyed / "spool").execute(
        spec, ToolCall("c1", "readfile", {"filename": str(ssh / "id_rsa")}), lambda e: None)
    assert "PRIVATE KEY" not in fin.result and "hidden" in fin.result, fin.result
