"""The folder-trust question in the TUI: asked once per project, before any of its code runs.

Every test starts from a fresh trust state (nothing trusted) and a checkout whose every way
in leaves a marker (fakes/hostile_checkout.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import hostile_checkout as hostile
from textual.pilot import Pilot
from textual.widgets import Button, Static
from tui_helpers import SIZE, app_for, send, until, wait_idle

from tuiapp.project import config as project_config
from tuiapp.project import inventory as project_inventory
from tuiapp.security import trust
from tuiapp.ui.live_reload import running_reloader
from tuiapp.ui.screens import trust as trust_screen
from tuiapp.ui.screens.trust import TrustScreen

pytestmark = pytest.mark.asyncio


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KEP_STATE_DIR", str(tmp_path / "fresh-state"))
    monkeypatch.delenv(hostile.ENV_VAR, raising=False)
    return hostile.make(tmp_path / "cloned")


async def wait_screen(pilot: Pilot[object]) -> None:
    app = pilot.app
    await until(pilot, lambda: isinstance(app.screen, TrustScreen)  # (composed: its last
                and bool(app.screen.query("#trust")), what="the trust screen")  # widget is in)


def screen_text(app: object) -> str:
    screen = app.screen  # type: ignore[attr-defined]
    assert isinstance(screen, TrustScreen)
    return str(screen.query_one("#trust-text", Static).render())


async def test_not_now_keeps_the_checkout_off_and_the_offline_model_answers(checkout: Path
                                                                            ) -> None:
    app = app_for(checkout)
    async with app.run_test(size=SIZE) as pilot:
        await wait_screen(pilot)
        text = screen_text(app)
        for part in ("1 executable", "1 Python pack", "1 MCP server", "1 allow rule",
                     "MCP server evil", "allow rule tool ~ /sneaky/", ".env", "kep.toml"):
            assert part in text
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, TrustScreen), what="dismissed")
        await until(pilot, app.tools_ready.is_set, what="tools")
        assert "readfile" in app.ws.registry.tools and "sneaky" not in app.ws.registry.tools
        await send(pilot, "hello")
        await wait_idle(pilot)
        assert app.chat.history[-1].role == "assistant" and app.chat.history[-1].content
        await pilot.pause(0.5)  # anything started late would have left its marker by now
    assert hostile.markers(checkout) == set()
    assert not trust.check(checkout).trusted
    assert hostile.ENV_VAR not in __import__("os").environ


async def test_trusting_on_the_screen_loads_the_project(checkout: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # The half-second guard, made independent of the machine's speed: first a click that
    # comes "too soon", then one that does not.
    monkeypatch.setattr(trust_screen, "SETTLE_SECONDS", 3600.0)
    app = app_for(checkout)
    async with app.run_test(size=SIZE) as pilot:
        await wait_screen(pilot)
        assert hostile.markers(checkout) == set()
        await pilot.click("#trust")  # too soon to be meant
        await pilot.pause(0.1)
        assert isinstance(app.screen, TrustScreen) and not trust.check(checkout).trusted
        monkeypatch.setattr(trust_screen, "SETTLE_SECONDS", 0.0)
        button = app.screen.query_one("#trust", Button)
        # (a Button ignores a click while it still shows the last press)
        await until(pilot, lambda: not button.has_class("-active"), what="the press to end")
        await pilot.click("#trust")
        await until(pilot, lambda: "sneaky" in app.ws.registry.tools, what="project tools")
        await until(pilot, lambda: hostile.SERVED in hostile.markers(checkout),
                    what="the project's MCP server to start")
        assert any(r.tool == "sneaky" and r.action == "allow"
                   for r in app.ws.config.approval.rules)
    assert trust.check(checkout).trusted
    assert {hostile.LISTED, hostile.IMPORTED} <= hostile.markers(checkout)
    # Asked once: the next start does not ask again.
    again = app_for(checkout)
    async with again.run_test(size=SIZE) as pilot:
        await until(pilot, again.tools_ready.is_set, what="tools")
        await pilot.pause(0.2)
        assert not isinstance(again.screen, TrustScreen)


@pytest.mark.parametrize("typed", ["this is fine\n", "trust\n", "yes please\n", "\n\t\n",
                                   "\t\n"])
async def test_typing_as_the_screen_appears_never_trusts(checkout: Path, typed: str,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    # Typed while the screen is new, however slow this machine is.
    monkeypatch.setattr(trust_screen, "SETTLE_SECONDS", 3600.0)
    app = app_for(checkout)
    async with app.run_test(size=SIZE) as pilot:
        await wait_screen(pilot)
        keys = {" ": "space", "\n": "enter", "\t": "tab"}
        # ("\t\n" too: Tab and Enter while the screen is new do not count.)
        await pilot.press(*(keys.get(c, c) for c in typed))
        await pilot.pause(0.3)
        assert "sneaky" not in app.ws.registry.tools
    assert not trust.check(checkout).trusted
    assert hostile.markers(checkout) == set()


async def test_a_trusted_project_that_gained_rules_is_asked_about_again(checkout: Path
                                                                        ) -> None:
    trust.trust(checkout)
    with (checkout / "kep.toml").open("a") as f:
        f.write('\n[[approval.rules]]\ntool = "execcmd"\naction = "allow"\n')
    app = app_for(checkout)
    async with app.run_test(size=SIZE) as pilot:
        await wait_screen(pilot)
        text = screen_text(app)
        assert "changed since you trusted it" in text
        assert "allow rule tool ~ /execcmd/" in text and "sneaky" not in text
        await until(pilot, lambda: "sneaky" in app.ws.registry.tools, what="trusted tools")
        assert not any(r.tool == "execcmd" for r in app.ws.config.approval.rules)
        await pilot.pause(0.5)
        await pilot.press("tab", "enter")  # the keyboard way
        await until(pilot, lambda: any(r.tool == "execcmd"
                                       for r in app.ws.config.approval.rules),
                    what="the new rule to apply")
    assert trust.check(checkout).gained == ()


async def test_the_screen_fits_80x24_with_500_rules(checkout: Path) -> None:
    (checkout / "kep.toml").write_text("".join(
        f'[[approval.rules]]\ntool = "t{i}\\u001b[2J"\naction = "allow"\n' for i in range(500)))
    app = app_for(checkout)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot)
        await pilot.pause(0.1)
        text = screen_text(app)
        # 500 rules, the server and the .env variable named KEP_…: eight shown
        assert "500 allow rules" in text and "… and 494 more" in text and "\x1b" not in text
        for button in app.screen.query(Button):
            region = button.region
            assert region.width > 0 and region.bottom <= 24 and region.right <= 80


async def test_rules_gained_while_kep_runs_are_held_back_and_asked_about(checkout: Path
                                                                         ) -> None:
    trust.trust(checkout)
    app = app_for(checkout, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: (r := running_reloader(app)) is not None
                    and r.ready.is_set(), what="hot reload")
        assert not isinstance(app.screen, TrustScreen)
        with (checkout / "kep.toml").open("a") as f:
            f.write('\n[[approval.rules]]\ntool = "writefile"\naction = "allow"\n')
        await wait_screen(pilot)
        assert "allow rule tool ~ /writefile/" in screen_text(app)
        assert not any(r.tool == "writefile" for r in app.ws.config.approval.rules)
        await pilot.press("escape")
        # Saved again with the same gain: a "Not now" is not asked twice.
        with (checkout / "kep.toml").open("a") as f:
            f.write("\n# touched\n")
        await pilot.pause(1.0)
        assert not isinstance(app.screen, TrustScreen)
        assert not any(r.tool == "writefile" for r in app.ws.config.approval.rules)


async def test_always_in_an_untrusted_folder_is_not_saved_where_it_would_not_apply(
        checkout: Path) -> None:
    before = (checkout / "kep.toml").read_text()
    app = app_for(checkout)
    async with app.run_test(size=SIZE) as pilot:
        await wait_screen(pilot)
        await pilot.press("escape")
        app.add_rule("execcmd", "allow")  # what `a` on an approval asks for
        await pilot.pause(0.1)
        assert any("not trusted" in n.message for n in app._notifications)
    assert (checkout / "kep.toml").read_text() == before


async def test_after_not_now_the_palette_asks_again(checkout: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    app = app_for(checkout)
    async with app.run_test(size=SIZE) as pilot:
        await wait_screen(pilot)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, TrustScreen), what="dismissed")
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Trust this folder" in titles
        command = next(c for c in app.get_system_commands(app.screen)
                       if c.title == "Trust this folder")
        command.callback()
        await wait_screen(pilot)
        assert "1 executable" in screen_text(app)
        monkeypatch.setattr(trust_screen, "SETTLE_SECONDS", 0.0)
        await pilot.click("#trust")
        await until(pilot, lambda: "sneaky" in app.ws.registry.tools, what="project tools")
        assert "Trust this folder" not in [c.title
                                           for c in app.get_system_commands(app.screen)]


async def test_a_provider_url_trusted_again_is_used_from_the_next_request(checkout: Path
                                                                         ) -> None:
    """The provider's base_url changed in kep.toml and the user trusted it again in the
    TUI: kep must not keep sending to the old URL for the rest of the session."""
    table = '\n[providers.local]\napi = "chat"\nbase_url = "http://127.0.0.1:9/v{n}"\n'
    with (checkout / "kep.toml").open("a") as f:
        f.write(table.format(n=1))
    trust.trust(checkout)
    text = (checkout / "kep.toml").read_text().replace("9/v1", "9/v2")
    app = app_for(checkout, model="local/some-model")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.2)
        assert app.chat.provider.config.base_url.endswith("/v1")
        # The file changes while kep runs: held back, asked about, and trusted again.
        (checkout / "kep.toml").write_text(text)
        q = project_inventory.question(project_config.load(checkout))
        assert q is not None and "provider local at http://127.0.0.1:9/v2" in q.gained
        trust_screen.answered(app, q, True)
        await pilot.pause(0.1)
        assert app.chat.provider.config.base_url == "http://127.0.0.1:9/v2"
