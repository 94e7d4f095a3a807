"""The "always" answer in the real app: it never beats a deny rule, and says which apply."""

from __future__ import annotations

from pathlib import Path

from tui_helpers import SIZE, app_for, make_project, send, tool_messages, wait_idle


async def test_always_allow_names_the_deny_rules_that_still_apply(tmp_path: Path) -> None:
    proj = make_project(tmp_path / "proj")
    (proj / "kep.toml").write_text('[tools]\nbuiltins = false\n\n[[approval.rules]]\n'
                                   'tool = "shout"\nargs = "secret"\naction = "deny"\n')
    app = app_for(proj)
    async with app.run_test(size=SIZE) as pilot:
        app.add_rule("shout", "allow")  # what `a` on a shout call does
        await pilot.pause()
        texts = [str(n.message) for n in app._notifications]
        assert any("deny wins" in t and "arguments match secret" in t for t in texts), texts
        text = (proj / "kep.toml").read_text()
        assert text.index('tool = "^shout$"') < text.index('args = "secret"')  # it is first
        await send(pilot, "shout secret.txt")
        await wait_idle(pilot)
        assert not (proj / "shout.ran").exists()
        result = tool_messages(app)[0]
        assert result.is_error and "denied by policy" in result.content
        assert not app.approval.display  # denied by the rule: nothing was asked
