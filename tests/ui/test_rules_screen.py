"""The rules screen (alt+r / palette): every rule with file, line, note and how many calls it
decided; space disables for the session, d d deletes from the file (comments kept),
shift+up/down moves. At 120x40 and 80x24."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import OptionList
from tui_helpers import SIZE, app_for, make_project, send, until, wait_approval, wait_idle

from tuiapp.ui.screens.rules import RulesScreen

KEP_TOML = """[tools]
builtins = false

# added by you on 2026-11-26 (y on shout)
[[approval.rules]]
tool = "shout"
action = "allow"

[[approval.rules]]
tool = "sleepy"
action = "deny"

[[approval.rules]]
tool = "nothing_[b]here[/]"
action = "ask"
"""


async def open_rules(pilot: object, app: object, *, key: bool = False) -> RulesScreen:
    if key:
        await pilot.press("alt+r")  # type: ignore[attr-defined]
    else:
        app.action_show_rules()  # type: ignore[attr-defined]
    await until(pilot, lambda: isinstance(app.screen, RulesScreen)  # type: ignore[arg-type,attr-defined]
                and bool(app.screen.items), what="rules screen")  # type: ignore[attr-defined]
    return app.screen  # type: ignore[attr-defined,no-any-return]


def prompts(screen: RulesScreen) -> list[str]:
    options = screen.query_one(OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


@pytest.mark.parametrize("size", [SIZE, (80, 24)])
async def test_rules_screen_lists_counts_disables_and_deletes(tmp_path: Path,
                                                              size: tuple[int, int]) -> None:
    proj = make_project(tmp_path / "proj")
    (proj / "kep.toml").write_text(KEP_TOML)
    app = app_for(proj)
    async with app.run_test(size=size) as pilot:
        await send(pilot, "shout notes.txt")
        await wait_idle(pilot)
        assert (proj / "shout.ran").read_text().count("\n") == 1  # allowed by line 5

        screen = await open_rules(pilot, app, key=True)
        lines = prompts(screen)
        # deny first (it wins wherever it stands), then allow/ask in file order
        assert "sleepy" in lines[0] and "kep.toml:9" in lines[0]
        assert "shout" in lines[1] and "kep.toml:5" in lines[1] and "decided 1" in lines[1]
        assert "added by you on 2026-11-26" in lines[1]
        assert "nothing_[b]here[/]" in lines[2]  # shown as written, never read as markup
        assert "[approval] default" in lines[-1]

        await pilot.press("down")  # the shout rule
        await pilot.press("space")
        assert "disabled for this session" in prompts(screen)[1]
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, RulesScreen), what="closed")
        await send(pilot, "shout other.txt")
        await wait_approval(pilot)  # no longer allowed: asked
        await pilot.press("n")
        await pilot.press("enter")
        await wait_idle(pilot)
        assert "kep.toml" in (proj / "kep.toml").name and 'tool = "shout"' in (
            proj / "kep.toml").read_text()  # disabling never touches the file

        screen = await open_rules(pilot, app)
        screen.query_one(OptionList).highlighted = 0  # the sleepy deny rule
        await pilot.press("d")
        assert 'tool = "sleepy"' in (proj / "kep.toml").read_text()  # one press: nothing yet
        await pilot.press("d")
        await pilot.pause()
        text = (proj / "kep.toml").read_text()
        assert 'tool = "sleepy"' not in text
        assert "# added by you on 2026-11-26 (y on shout)" in text  # comments kept
        assert not any(r.tool == "sleepy" for r in app.ws.config.approval.rules)


async def test_built_in_entries_cannot_be_deleted_and_moves_stay_in_the_file(
        tmp_path: Path) -> None:
    proj = make_project(tmp_path / "proj")
    (proj / "kep.toml").write_text(KEP_TOML)
    app = app_for(proj)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, app.tools_ready.is_set, what="tools")
        screen = await open_rules(pilot, app)
        options = screen.query_one(OptionList)
        options.highlighted = options.option_count - 1  # [approval] default
        await pilot.press("d", "d")
        assert "can't be changed" in str(screen.query_one("#rules-status").render())
        options.highlighted = 1  # shout (allow, line 5): move it below the ask rule
        await pilot.press("shift+down")
        await pilot.pause()
        text = (proj / "kep.toml").read_text()
        assert text.index('tool = "nothing_') < text.index('tool = "shout"')
        assert text.index("# added by you") < text.index('tool = "shout"')  # the note moved too
        assert [r.tool for r in app.ws.config.approval.rules if r.action != "deny"] == [
            "nothing_[b]here[/]", "shout"]


async def test_the_rules_screen_opens_over_pending_calls_and_gives_them_back(
        tmp_path: Path) -> None:
    proj = make_project(tmp_path / "proj")
    (proj / "kep.toml").write_text(KEP_TOML.replace('tool = "shout"\naction = "allow"',
                                                    'tool = "shout"\naction = "ask"'))
    app = app_for(proj)
    async with app.run_test(size=(80, 24)) as pilot:
        await send(pilot, "shout notes.txt")
        panel = await wait_approval(pilot)
        assert panel.has_focus_within  # the question has the keyboard
        screen = await open_rules(pilot, app, key=True)
        await pilot.press("y")  # on the rules screen: not an answer to the call
        assert panel.current is not None and not (proj / "shout.ran").exists()
        assert "decided" in prompts(screen)[1]
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, RulesScreen), what="closed")
        await wait_approval(pilot)
        await pilot.press("y")
        await wait_idle(pilot)
        assert (proj / "shout.ran").exists()
