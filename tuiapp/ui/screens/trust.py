"""The folder-trust question: shown once per project, before any of its code runs.

It lists what trusting would switch on (counted by tuiapp.security.trust without running anything)
and
offers two answers. "Not now" is focused and is what Esc and a stray Enter give: trusting
takes a deliberate move to its button (Tab, Enter, or a click), and none counts in the first
half second, so text typed as the screen appears never trusts. The
decision itself and its record stay in tuiapp.security.trust; this screen only asks.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, ClassVar
from weakref import WeakKeyDictionary

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from tuiapp.project import config as project_config
from tuiapp.project import inventory
from tuiapp.security import trust
from tuiapp.security.trust_items import one_line
from tuiapp.settings import config_types
from tuiapp.ui.literal import literal, say

if TYPE_CHECKING:
    from tuiapp.ui.app_api import KepApp

_ASKED: WeakKeyDictionary[object, tuple[str, ...]] = WeakKeyDictionary()
# Keys and clicks on Trust this soon after the screen appears were meant for something else.
SETTLE_SECONDS = 0.5


def describe(q: trust.Question) -> str:
    """The screen's text (plain: file contents are never read as markup)."""
    root = one_line(q.root)
    lines: list[str] = []
    if q.gained:
        lines += [f"{root} changed since you trusted it. It now also has:",
                  *_bullets(q.gained), "",
                  "Until you trust it again, these are not applied; the rest stays as "
                  "trusted."]
    else:
        c = q.contents
        lines += [f"{root} is a folder you have not trusted yet.",
                  f"It contains {c.summary()}.", ""]
        named = [*(f"MCP server {s}" for s in c.servers), *c.allow_rules, *c.providers,
                 *c.others, *c.runtimes]
        if named:
            lines += [*_bullets(named), ""]
        lines += ["Trusting it lets kep list and run its tools (listing them runs them), "
                  "import its Python packs, start its MCP servers, read its .env and apply "
                  "its kep.toml. It covers every folder under it.",
                  "Not now: kep's built-in functions and your own config only."]
    return "\n".join(lines)


def _bullets(items: tuple[str, ...] | list[str]) -> list[str]:
    """Every item, whole (the text scrolls): a rule cut short could hide what it allows."""
    return [f"  • {one_line(i)}" for i in items]


class TrustScreen(ModalScreen[bool]):
    """Dismissed with True (trust) or False (not now)."""

    DEFAULT_CSS = """
    TrustScreen { align: center middle; }
    TrustScreen > Vertical {
        width: 90%; max-width: 100; height: auto; max-height: 90%;
        border: round $warning; background: $surface; padding: 0 1;
    }
    TrustScreen #trust-text { height: auto; max-height: 20; overflow-y: auto; }
    TrustScreen Horizontal { height: auto; margin-top: 1; }
    TrustScreen Button { margin-right: 2; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "not_now", "Not now", id="trust_not_now")]
    AUTO_FOCUS = "#not-now"

    def __init__(self, q: trust.Question) -> None:
        super().__init__()
        self.question = q
        self._shown_at = float("inf")

    def on_mount(self) -> None:
        self._shown_at = time.monotonic()

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = ("Trust this folder again?" if self.question.gained
                                else "Trust this folder?")
            yield Static(literal(describe(self.question)), id="trust-text")
            with Horizontal():
                yield Button(Content("Not now (Esc)"), id="not-now", compact=True)
                yield Button(Content("Trust this folder"), id="trust", compact=True,
                             variant="warning")

    def action_not_now(self) -> None:
        self.dismiss(False)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id != "trust":
            self.dismiss(False)
        elif time.monotonic() - self._shown_at >= SETTLE_SECONDS:
            self.dismiss(True)


def ask_if_needed(app: KepApp) -> None:
    """At startup: ask about this project when folder trust has a question."""
    q = inventory.question(app.ws.config)
    if q is not None:
        _ask(app, q)


def ask_if_gained(app: KepApp) -> None:
    """After kep.toml or mcp.json was reloaded: ask again when the trusted project gained
    entries not asked about yet in this session (a "Not now" is not asked twice)."""
    q = inventory.question(app.ws.config)
    if q is not None and q.gained and _ASKED.get(app) != q.gained and \
            not isinstance(app.screen, TrustScreen):
        _ask(app, q)


def ask_again(app: KepApp) -> None:
    """The palette's "Trust this folder": the same question, asked on request."""
    q = inventory.question(app.ws.config)
    if q is not None and not isinstance(app.screen, TrustScreen):
        _ask(app, q)


def _ask(app: KepApp, q: trust.Question) -> None:
    _ASKED[app] = q.gained
    app.push_screen(TrustScreen(q), lambda yes: answered(app, q, bool(yes)))


def answered(app: KepApp, q: trust.Question, yes: bool) -> None:
    if not yes:
        what = ("the new entries stay off" if q.gained
                else "its tools, servers, .env and kep.toml stay off")
        app.notify(say("Not trusted: {}. `kep trust` trusts it.", what), title="Folder trust",
                   timeout=8)
        return
    try:
        trust.trust(q.root)
        state = trust.check(app.ws.root)
        project_config.load_dotenv(app.ws.root, state)
        cfg = project_config.load(app.ws.root, trust_state=state)
    except (trust.TrustError, config_types.ConfigError) as e:
        app.notify(literal(e), title="Folder trust", severity="error", timeout=12)
        return
    app.ws.reconfigure(cfg)
    problem = app.chat.apply_config(cfg)  # a provider's new base_url: from the next request
    if problem:
        app.notify(say("Trusted, but {}", problem), title="Folder trust", severity="warning")
    app.ws.start_mcp(emit=app._sink, on_state=app._mcp_state)
    app.refresh_tools()
    app.notify(say("Trusted {}: its tools are being listed.", one_line(q.root)),
               title="Folder trust")
