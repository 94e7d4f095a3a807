"""Many calls at once in the TUI: the ones waiting for a slot show "queued", and a flood of
calls in one reply stays a few blocks plus one counting line (the screen stays responsive)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write_tool
from textual.widgets import Static
from tui_helpers import SIZE, ScriptedProvider, app_for, make_project, send, until, wait_idle

from tuiapp.providers.base import StreamEnd
from tuiapp.ui.widgets.call_batch import SHOWN, CallBatchLine
from tuiapp.ui.widgets.tool_block import ToolCallBlock
from tuiapp.ui.widgets.tool_panes import LIVE_PANES, ToolPanes
from tuiapp.ui.widgets.transcript import Transcript
from tuiapp.vocab.messages import ToolCall

NAP = """#!/bin/sh
if [ "$1" = "--list-functions" ]; then
  echo '[{"name": "nap", "description": "d", "parameters": {"type": "object"}}]'
  exit 0
fi
while [ ! -e "$LLM_ROOT_DIR/release" ] && [ %s = hold ]; do sleep 0.05; done
echo napped
"""


def project(tmp_path: Path, hold: str, parallel: int) -> Path:
    root = make_project(tmp_path / "proj")
    write_tool(root / "prompts" / "functions" / "nap", NAP % hold)
    (root / "kep.toml").write_text(
        f'[approval]\ndefault = "allow"\n[tools]\nbuiltins = false\nmax_parallel = {parallel}\n')
    return root


def calls(n: int) -> list[ToolCall]:
    return [ToolCall(f"c{i}", "nap", {"n": i}) for i in range(n)]


async def test_calls_waiting_for_a_slot_show_queued(tmp_path: Path) -> None:
    provider = ScriptedProvider([[*calls(3), StreamEnd("tool_use")], [StreamEnd("end_turn")]])
    app = app_for(project(tmp_path, "hold", 1), provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        transcript = app.query_one(Transcript)
        await until(pilot, lambda: [transcript.block(f"c{i}") and transcript.block(f"c{i}").status
                                    for i in range(3)] == ["running", "queued", "queued"],
                    what="one running, two queued")
        meta = transcript.block("c2").query_one(".tool-meta", Static)  # type: ignore[union-attr]
        assert "queued" in str(meta.render())
        (app.ws.root / "release").touch()  # the calls may end now
        await wait_idle(pilot)
        statuses = [b.status for i in range(3) if (b := transcript.block(f"c{i}"))]
        assert statuses == ["ok"] * 3


@pytest.mark.slow
async def test_a_flood_of_calls_is_a_few_blocks_and_one_counting_line(tmp_path: Path) -> None:
    n = SHOWN + 24
    provider = ScriptedProvider([[*calls(n), StreamEnd("tool_use")], [StreamEnd("end_turn")]])
    app = app_for(project(tmp_path, "go", 4), provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "go")
        await wait_idle(pilot)
        assert len(app.query(ToolCallBlock)) == SHOWN
        line = app.query_one(CallBatchLine)
        await until(pilot, lambda: "24 ok" in str(line.render()), what="the counts")
        assert "and 24 more tool calls in this reply" in str(line.render())
        panes = app.query_one(ToolPanes)
        assert sum(1 for i in range(n) if panes.pane(f"c{i}")) <= LIVE_PANES
        assert len([m for m in app.chat.history if m.role == "tool"]) == n
