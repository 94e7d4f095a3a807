"""`kep new`: every template lists, runs and passes the check as generated; bad names refused."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest
from conftest import KEP, kep_env

from tuiapp.project import config as project_config
from tuiapp.tools.check import check_entries
from tuiapp.tools.registry import Registry
from tuiapp.tools.runner import Runner
from tuiapp.tools.templates import LANGS, TemplateError, create
from tuiapp.vocab.messages import ToolCall

PAIRS = [(fmt, lang) for fmt, langs in LANGS.items() for lang in langs]


async def list_run_check(root: Path, name: str, tmp: Path) -> tuple[list[str], str, list]:
    cfg = project_config.load(root)
    reg = Registry(cfg)
    await reg.refresh()
    assert not reg.broken, reg.broken
    spec = reg.tools[name]
    runner = Runner(cfg, spool_dir=tmp / "spool")
    out = await runner.run(spec, ToolCall("c1", name, {"message": "hi there", "shout": True}),
                           lambda e: None)
    findings = await check_entries(reg.entries(), reg.context())
    return sorted(reg.tools), out.finished.result.strip(), findings


@pytest.mark.slow
@pytest.mark.parametrize(("fmt", "lang"), PAIRS)
def test_template_lists_runs_and_passes_the_check(project: Path, tmp_path: Path, fmt: str,
                                                  lang: str) -> None:
    (project / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    made = create(project, "word_count", fmt, lang)
    assert made.path.is_file() and made.path.is_relative_to(project)
    if made.path.read_text().startswith("#!"):
        assert os.access(made.path, os.X_OK)
    names, result, findings = asyncio.run(list_run_check(project, "word_count", tmp_path))
    assert names == ["word_count"]
    assert result == "HI THERE"
    # Every finding but the listing's timing: how long a listing takes depends on the
    # machine's load, and tests hold no timed assertions.
    assert [f for f in findings if f.code != "slow-listing"] == []


def test_keprompt_names_may_have_a_dash(project: Path, tmp_path: Path) -> None:
    create(project, "word-count", "keprompt", "bash")
    (project / "kep.toml").write_text("[tools]\nbuiltins = false\n")
    names, result, findings = asyncio.run(list_run_check(project, "word-count", tmp_path))
    assert (names, result, findings) == (["word-count"], "HI THERE", [])


@pytest.mark.parametrize("name", ["../x", "a\tb", "a\x1b[31m", "x" * 2048, "", "Upper",
                                  "a b", "1abc", "a/b", "a\nb", "é"])
def test_hostile_names_get_one_clear_error_and_write_nothing(project: Path, name: str) -> None:
    before = sorted(p for p in project.rglob("*"))
    with pytest.raises(TemplateError) as e:
        create(project, name, "keprompt")
    msg = str(e.value)
    assert msg.startswith("invalid name") and "\n" not in msg and "\x1b" not in msg
    assert "\t" not in msg and len(msg) < 200
    assert sorted(p for p in project.rglob("*")) == before


def test_wrong_language_or_format(project: Path) -> None:
    with pytest.raises(TemplateError, match="python"):
        create(project, "x", "loki", "bash")
    with pytest.raises(TemplateError, match="unknown format"):
        create(project, "x", "nope")


def kep(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KEP, *argv], capture_output=True, text=True, env=kep_env(),
                          timeout=60)


def test_cli_prints_the_path_and_never_overwrites(project: Path) -> None:
    res = kep("new", "greet", "--project", str(project))
    path = project / "prompts" / "functions" / "greet"
    assert res.returncode == 0 and res.stdout.strip() == str(path), res.stderr
    path.write_text("#!/bin/sh\n# mine\n")
    res = kep("new", "greet", "--project", str(project))
    assert res.returncode == 2 and "exists" in res.stderr and res.stderr.count("\n") == 1
    assert path.read_text() == "#!/bin/sh\n# mine\n"
    res = kep("new", "../evil", "--project", str(project))
    assert res.returncode == 2 and res.stderr.startswith("kep: invalid name")
    assert not (project / "prompts" / "evil").exists()


def test_cli_refuses_a_symlink_in_the_way(project: Path, tmp_path: Path) -> None:
    (project / "prompts" / "functions" / "ln").symlink_to(tmp_path / "nowhere")
    res = kep("new", "ln", "--project", str(project))
    assert res.returncode == 2 and "exists" in res.stderr
    assert not (tmp_path / "nowhere").exists()


def test_aitool_source_added_to_a_kep_toml_that_sets_sources_inline_is_refused(
        project: Path) -> None:
    (project / "kep.toml").write_text('[tools]\nsources = []\n')
    with pytest.raises(TemplateError, match="add it by hand"):
        create(project, "calc", "aitool")
    assert not (project / "aitools" / "calc.py").exists()
    assert (project / "kep.toml").read_text() == '[tools]\nsources = []\n'
