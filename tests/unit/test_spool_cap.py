"""The spool is bounded per call (`[tools] spool_max_mb`) and per session
(`[tools] spool_session_mb`): past the limit it keeps the head and the tail, and says so."""

from __future__ import annotations

import asyncio
from pathlib import Path

from test_runner import Recorder, run, runner, tool

from tuiapp.tools.call_output import Spool, SpoolBudget

MB = 1 << 20
# Numbered lines, so head and tail can be told apart: "line 0000001" … (13 bytes each).


def flood(root: Path, name: str, lines: int) -> object:
    body = f"python3 -c \"import sys; sys.stdout.write(''.join('line %07d\\\\n' % i " \
           f"for i in range({lines})))\""
    return tool(root, name, body)


async def test_one_call_over_spool_max_mb_keeps_head_and_tail(tmp_path: Path) -> None:
    r = runner(tmp_path, spool_max_mb=1)
    lines = 400_000  # 5.2 MB
    fin = await run(r, flood(tmp_path, "big", lines), rec=Recorder())  # type: ignore[arg-type]
    assert fin.status == "ok"
    spool = Path(fin.spool_path)
    size = spool.stat().st_size
    assert size <= MB + 4096, size
    text = spool.read_text()
    assert text.startswith("line 0000000\n")
    assert f"line {lines - 1:07d}\n" in text  # the very end is there
    assert "[kep: spool limit reached ([tools] spool_max_mb per call): " in text
    note = text[text.index("[kep: spool limit"):].split("\n", 1)[0]
    omitted = int(note.split("): ")[1].split(" bytes")[0])
    assert omitted > 3.9 * MB
    assert text.rstrip().endswith("ms]")  # the footer is still there
    # What the model is told is true: that file does not have the full output.
    assert fin.truncated and "full output" not in fin.result
    said = fin.result[fin.result.index(str(spool)):].split("\n", 1)[0]
    assert "keeps only the head and the tail of the output" in said
    cut = int(said.split(": ")[1].split(" bytes cut")[0])
    assert abs(cut - omitted) < 64 * 1024, (cut, omitted)  # (told before the tail settles)
    assert "[tools] spool_max_mb" in said


async def test_a_spool_that_has_everything_says_full_output(tmp_path: Path) -> None:
    r = runner(tmp_path, spool_max_mb=100)
    fin = await run(r, flood(tmp_path, "mid", 100_000), rec=Recorder())  # type: ignore[arg-type]
    assert fin.truncated  # over output_cap for the model, all of it in the spool
    assert f"full output: {fin.spool_path}" in fin.result
    assert "spool limit" not in Path(fin.spool_path).read_text()


async def test_the_session_budget_caps_all_calls_together(tmp_path: Path) -> None:
    r = runner(tmp_path, spool_max_mb=0.75, spool_session_mb=1)
    spec = flood(tmp_path, "mid", 40_000)  # 520 KB each
    results = [await run(r, spec, rec=Recorder(), call_id=f"c{i}") for i in range(3)]  # type: ignore[arg-type]
    total = sum(p.stat().st_size for p in (tmp_path / "spool").iterdir())
    assert total <= MB + 3 * 4096, total
    texts = [Path(f.spool_path).read_text() for f in results]
    assert "spool limit" not in texts[0] and "line 0039999" in texts[0]
    assert any("[tools] spool_session_mb for this session" in t for t in texts[1:])
    assert all(t.startswith("line 0000000") or t.startswith("\n[kep: spool limit")
               for t in texts)


async def test_parallel_floods_stay_within_the_session_budget(tmp_path: Path) -> None:
    r = runner(tmp_path, spool_max_mb=1, spool_session_mb=2)
    spec = flood(tmp_path, "par", 120_000)  # ~1.5 MB each
    await asyncio.gather(*(run(r, spec, rec=Recorder(), call_id=f"p{i}")  # type: ignore[arg-type]
                           for i in range(5)))
    total = sum(p.stat().st_size for p in (tmp_path / "spool").iterdir())
    assert total <= 2 * MB + 5 * 4096, total


async def test_a_resumed_session_counts_the_spool_files_it_has(tmp_path: Path) -> None:
    (tmp_path / "spool").mkdir()
    (tmp_path / "spool" / "old.log").write_bytes(b"x" * MB)
    r = runner(tmp_path, spool_session_mb=1)
    fin = await run(r, flood(tmp_path, "more", 10_000), rec=Recorder())  # type: ignore[arg-type]
    text = Path(fin.spool_path).read_text()
    assert "spool_session_mb" in text and "line 0009999" not in text.split("[kep: spool")[0]


def test_a_cut_in_the_middle_of_a_multibyte_character_is_clean(tmp_path: Path) -> None:
    s = Spool(tmp_path / "s.log", cap=80)
    s.write("stdout", "é" * 100)
    s.write("stderr", "ü" * 5 + "\n")
    s.close("[kep: ok]")
    text = (tmp_path / "s.log").read_bytes().decode("utf-8")  # strict: no broken character
    assert text.startswith("é") and "spool limit reached" in text and "[stderr] üüüüü" in text
    assert text.endswith("[kep: ok]\n")


def test_budget_never_grants_more_than_the_limit() -> None:
    b = SpoolBudget(lambda: 100, used=90)
    assert b.take(50) == 10 and b.take(1) == 0 and b.used == 100
