"""The workbench's Run: the same policy decision as `kep call` (ask → allow, deny stands),
arguments checked before anything runs, output streamed and counted."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path

from tools_testutil import sh_tool

from tuiapp.settings import config, config_types
from tuiapp.tools.direct import run_direct
from tuiapp.tools.registry import Registry
from tuiapp.tools.runner import Runner

SCHEMA = ('{"type":"object","properties":{"n":{"type":"integer","description":"n"}},'
          '"required":["n"],"additionalProperties":false}')
DEFS = f'[{{"name":"mark","description":"Leave a mark.","parameters":{SCHEMA}}}]'


def setup(project: Path, tmp_path: Path, rules: str) -> config_types.Config:
    sh_tool(project / "prompts" / "functions" / "mark", f"  echo '{DEFS}'",
            f'cat >/dev/null; touch {tmp_path}/ran; printf "out\\033[31m"; echo err >&2')
    return config.parse(tomllib.loads(f"[tools]\nbuiltins = false\n{rules}"), "test", project)


def go(cfg: config_types.Config, tmp_path: Path, args: dict) -> tuple:
    async def main() -> tuple:
        reg = Registry(cfg)
        await reg.refresh()
        seen: list[tuple[str, str]] = []
        run = await run_direct(Runner(cfg, spool_dir=tmp_path / "spool"), reg.tools["mark"],
                               args, cfg.approval, lambda s, t: seen.append((s, t)))
        return run, seen
    return asyncio.run(main())


def test_ask_becomes_allow_and_output_streams(project: Path, tmp_path: Path) -> None:
    cfg = setup(project, tmp_path, '[approval]\ndefault = "ask"\n')
    run, seen = go(cfg, tmp_path, {"n": 1})
    assert run.status == "ok" and run.exit_code == 0 and (tmp_path / "ran").exists()
    assert run.bytes == len("out\x1b[31m") + len("err\n")
    assert ("stderr", "err\n") in seen and run.duration_ms > 0
    assert "exit 0" in run.summary()


def test_a_deny_rule_still_stands(project: Path, tmp_path: Path) -> None:
    cfg = setup(project, tmp_path,
                '[[approval.rules]]\ntool = "^mark$"\naction = "deny"\n')
    run, seen = go(cfg, tmp_path, {"n": 1})
    assert run.status == "denied" and "nothing was run" in run.note
    assert not (tmp_path / "ran").exists() and seen == []


def test_invalid_arguments_run_nothing(project: Path, tmp_path: Path) -> None:
    cfg = setup(project, tmp_path, "")
    for args in ({}, {"n": "1"}, {"n": 1, "extra": "\t"}):
        run, _ = go(cfg, tmp_path, args)
        assert run.status == "invalid" and "nothing was run" in run.note
    assert not (tmp_path / "ran").exists()


def test_prune_spool_keeps_the_newest(tmp_path: Path) -> None:
    import os

    from tuiapp.tools.direct import prune_spool

    for i in range(60):
        f = tmp_path / f"{i}.log"
        f.write_text("x")
        os.utime(f, (1000 + i, 1000 + i))
    prune_spool(tmp_path, keep=50)
    assert sorted(int(p.stem) for p in tmp_path.iterdir()) == list(range(10, 60))
    prune_spool(tmp_path / "missing")  # no dir yet: nothing to do
