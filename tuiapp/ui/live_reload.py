"""Hot reload in the TUI: a Reloader in a worker, its callbacks turned into what the user sees.

- tools: the functions panel updates and a short notification names what changed (broken
  files with their reason);
- config: approval rules apply at once (the conversation reads them per call); runner limits,
  max_steps and the current model's provider settings from the next call; a bad edit is
  reported with file and key, and the previous config stays in force;
- themes: theme files are read again and the current theme is re-applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from textual.app import App

from tuiapp.project.reloader import Reloader, describe
from tuiapp.settings import config_writer
from tuiapp.settings.config_types import Config, ConfigError
from tuiapp.ui.themes import register_themes
from tuiapp.vocab.events import RegistryChanged

if TYPE_CHECKING:
    from tuiapp.ui.app_api import KepApp

_RUNNING: WeakKeyDictionary[App[object], Reloader] = WeakKeyDictionary()


def running_reloader(app: App[object]) -> Reloader | None:
    """The app's running Reloader (tests wait for its `ready`), or None."""
    return _RUNNING.get(app)


async def run(app: KepApp) -> None:
    """Watch until cancelled (the app's exit cancels its workers); threads end with it."""
    reloader = Reloader(
        app.ws,
        on_tools=lambda diff: tools_changed(app, diff),
        on_config=lambda cfg, error: config_changed(app, cfg, error),
        on_themes=lambda: themes_changed(app),
    )
    _RUNNING[app] = reloader
    try:
        await reloader.run()
    except Exception as e:  # a bug: say that hot reload stopped rather than fail silently
        app.notify(f"Hot reload stopped: {type(e).__name__}: {e}", severity="error", timeout=15)
        raise
    finally:
        reloader.stop()
        _RUNNING.pop(app, None)


def tools_changed(app: KepApp, diff: RegistryChanged) -> None:
    app.show_tools()
    text = describe(diff, app.ws.registry, app.ws.root)
    if diff.broken:
        app.notify(f"tools: {text}", title="Functions", severity="warning", timeout=10)
    else:
        app.notify(f"tools: {text}", title="Functions", timeout=4)


def config_changed(app: KepApp, cfg: Config | None, error: ConfigError | None) -> None:
    if error is not None:
        app.notify(f"{error}\nThe previous config stays in force.", title="Config not reloaded",
                   severity="error", timeout=12)
        return
    assert cfg is not None
    problem = app.chat.apply_config(cfg)
    if cfg.theme != app.theme and cfg.theme in app.available_themes:
        app.theme = cfg.theme
    for line in cfg.warnings:
        app.notify(line, title="Config", severity="warning", timeout=12)
    if problem:
        app.notify(f"Config reloaded, but {problem}", title="Config", severity="warning",
                   timeout=10)
    elif not config_writer.written_by_kep(cfg.files):
        # kep's own writes (an "always" rule, a theme) have announced themselves already.
        app.notify("Config reloaded: it applies from the next call.", title="Config")
    from tuiapp.ui.screens.trust import ask_if_gained

    ask_if_gained(app)  # new allow rules or servers in a trusted project: held back, asked


def themes_changed(app: KepApp) -> None:
    for error in register_themes(app):
        app.notify(error, title="Theme", severity="warning", timeout=8)
    app.mutate_reactive(App.theme)  # re-apply the current theme: its file may have changed
