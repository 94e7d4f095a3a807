"""Starting `kep`: usage errors before the screen opens, and no SDK import before the first
frame (the provider is built in the background once the app is on screen)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import KEP, kep_env

PROBE = r'''
import asyncio, json, sys
from pathlib import Path
from tuiapp.project import config as project_config
from tuiapp.ui.app import KepApp
from tuiapp.project.workspace import Workspace

seen = {}

class Probe(KepApp):
    def on_ready(self) -> None:  # the first screen has been drawn
        seen["sdk_at_first_frame"] = "openai" in sys.modules
        seen["tools_at_first_frame"] = self.tools_ready.is_set()

async def main() -> None:
    ws = Workspace(project_config.load(Path(sys.argv[1])))
    app = Probe(ws, model="openai/gpt-5-mini", store=None, session_id=None, history=(),
                provider=None, first_run=False, label=None, watch=False)
    async with app.run_test() as pilot:
        for _ in range(1500):  # the SDK arrives in the background, while the app runs
            await pilot.pause(0.02)
            if "openai" in sys.modules:
                break
        seen["sdk_later"] = "openai" in sys.modules
        seen["label"] = app.chat.provider.label

asyncio.run(main())
print(json.dumps(seen))
'''


def test_first_frame_comes_before_tools_and_the_sdk(project: Path) -> None:
    out = subprocess.run([sys.executable, "-c", PROBE, str(project)], capture_output=True,
                         text=True, timeout=60, env=kep_env(OPENAI_API_KEY="sk-test-not-real"))
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"sdk_at_first_frame": False, "tools_at_first_frame": False,
                    "sdk_later": True, "label": "openai/gpt-5-mini"}


@pytest.mark.parametrize(("argv", "message"), [
    (["--model", "nope/x"], "unknown provider 'nope'"),
    (["--model", "anthropic/claude-sonnet-5-5"], "ANTHROPIC_API_KEY is not set"),
    (["--session", "ffffffff"], "no session 'ffffffff'"),
    (["--continue"], "no earlier session in this project"),
])
def test_usage_errors_exit_2_before_the_screen_opens(project: Path, argv: list[str],
                                                       message: str) -> None:
    out = subprocess.run([*KEP, "--project", str(project), *argv], capture_output=True,
                         text=True, timeout=30, env=kep_env(), stdin=subprocess.DEVNULL)
    assert out.returncode == 2
    assert message in out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""
