"""kep's own edits of kep.toml (`a a`, `d d`, a theme choice) keep the user's comments and
layout: only the rule or the value kep adds changes."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from tui_helpers import SIZE, app_for, make_project, send, wait_approval, wait_idle

from tuiapp.settings import config_writer

COMMENTED = """\
# My project's kep settings: read by the whole team, keep the notes.
theme = "dark"   # the office screens are dark

[tools]
# Built-ins off: this project's own tools only.
builtins = false
timeout = 30     # seconds; the slow linter needs it

# Rules we agreed on (see the wiki).
[[approval.rules]]
tool = "^rm$"    # never, not even once
action = "deny"
"""


def comment_lines(text: str) -> list[str]:
    return [line[line.index("#"):] for line in text.splitlines() if "#" in line]


@pytest.mark.slow
async def test_always_allow_always_deny_and_a_theme_change_keep_every_comment(
        tmp_path: Path) -> None:
    proj = make_project(tmp_path / "proj")
    kep_toml = proj / "kep.toml"
    kep_toml.write_text(COMMENTED)
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        for typed, key in (("shout notes.txt", "a"), ("sleepy", "d")):
            await send(pilot, typed)
            panel = await wait_approval(pilot)
            await pilot.pause(0.7)  # past the guard: the keys are meant for the call
            await pilot.press(key)
            await pilot.pause(0.2)
            whole = next(i for i, o in enumerate(panel.choices(), 1) if o.args is None)
            await pilot.press(str(whole))  # "always", for the whole tool
            await wait_idle(pilot)
        app.set_theme("light")
        await pilot.pause()
    text = kep_toml.read_text()
    # Every comment is still there, in its place.
    assert comment_lines(text) == comment_lines(COMMENTED)
    assert text.startswith("# My project's kep settings")
    assert 'theme = "light"   # the office screens are dark' in text
    assert "timeout = 30     # seconds; the slow linter needs it" in text
    data = tomllib.loads(text)
    assert [(r["tool"], r["action"]) for r in data["approval"]["rules"]] == [
        ("^sleepy$", "deny"), ("^shout$", "allow"), ("^rm$", "deny")]
    assert data["tools"] == {"builtins": False, "timeout": 30}
    assert "rules = [" not in text  # still one [[approval.rules]] table per rule


def test_a_new_top_level_key_goes_before_the_first_table(tmp_path: Path) -> None:
    f = tmp_path / "config.toml"
    f.write_text('model = "offline"  # cheap\n\n# tools\n[tools]\ntimeout = 5\n')
    config_writer.set_value(f, "theme", "light")
    text = f.read_text()
    assert text.index('theme = "light"') < text.index("# tools") < text.index("[tools]")
    assert tomllib.loads(text) == {"model": "offline", "theme": "light", "tools": {"timeout": 5}}
    assert "# cheap" in text


def test_rules_written_inline_stay_inline_with_the_new_rule_first(tmp_path: Path) -> None:
    f = tmp_path / "kep.toml"
    f.write_text('[approval]\ndefault = "ask"  # ask me\n'
                 'rules = [{ tool = "a", action = "deny" }]  # the list\n')
    config_writer.add_rule(f, "^b$", "allow")
    text = f.read_text()
    assert "# ask me" in text and "# the list" in text
    assert [r["tool"] for r in tomllib.loads(text)["approval"]["rules"]] == ["^b$", "a"]


def test_a_shape_the_edit_cannot_keep_is_still_written_right(tmp_path: Path) -> None:
    # Dotted keys: whatever tomlkit makes of them, the file must read as intended.
    f = tmp_path / "kep.toml"
    f.write_text('approval.default = "ask"\n# hostile: a tab\there\nmodel = "x\\ty"\n')
    config_writer.add_rule(f, "^x\ty$", "deny")
    data = tomllib.loads(f.read_text())
    assert data["approval"]["default"] == "ask" and data["model"] == "x\ty"
    assert data["approval"]["rules"] == [{"tool": "^x\ty$", "action": "deny"}]
