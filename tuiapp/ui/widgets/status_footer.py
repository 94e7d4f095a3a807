"""The bottom line: model, session tokens, how full the context is, active agent/prompt,
the approval mode, state, who gets the next key, and the keys that matter right now (each one
clickable)."""

from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

from tuiapp.ui import keys
from tuiapp.vocab.events import ContextUsed, Usage

# (key shown, label, action) per state. The full list is in the README and under ctrl+p → Keys.
KEYS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "idle": (("enter", "send", ""), ("ctrl+p", "commands", "app.command_palette"),
             ("ctrl+f", "functions", "app.toggle_functions"),
             ("ctrl+t", "panes", "app.toggle_panes"), ("ctrl+q", "quit", "app.quit")),
    "streaming": (("esc", "interrupt", "app.interrupt"),
                  ("ctrl+p", "commands", "app.command_palette")),
    "tools": (("esc", "cancel tools", "app.interrupt"), ("ctrl+t", "panes", "app.toggle_panes"),
              ("ctrl+p", "commands", "app.command_palette")),
    "approval": (("y", "allow", ""), ("n", "deny", ""), ("s/a + digit", "session/always", ""),
                 ("e", "edit", ""), ("Y Y/N N", "all", ""), ("esc", "message box", "")),
    # A call waits, but the keyboard is elsewhere (the message box): Esc goes to the call.
    "approval-away": (("esc", "answer the call", "app.interrupt"), ("enter", "send", ""),
                      ("ctrl+p", "commands", "app.command_palette")),
    "error": (("ctrl+r", "retry", "app.retry"), ("enter", "send", ""),
              ("ctrl+p", "commands", "app.command_palette")),
}
_APPROVAL = {"y": "{approve}", "n": "{deny}", "s/a + digit": "{session}/{always} + digit",
             "e": "{edit}", "Y Y/N N": "{approve_all} {approve_all}/{deny_all} {deny_all}",
             "esc": "{approval_back}"}


def in_force(key: str, action: str) -> str:
    """The key as the user's `[keys]` has it (ui/keys.py), for a hint written with the
    default."""
    name = action.removeprefix("app.")
    if name in keys.ACTIONS:
        return keys.shown(keys.key(name))
    if key in _APPROVAL:
        return _APPROVAL[key].format(**{n: keys.shown(keys.key(n)) for n in keys.ACTIONS})
    return key


# Who gets the next key, in a narrow footer (the keys matter as much).
SHORT_NAMES = {"message box": "prompt", "functions filter": "filter", "tool panes": "panes"}
COMPACT_BELOW = 100  # columns (as the app's narrow layout)
STATE_LABEL = {"idle": "", "streaming": "● answering", "tools": "⌛ running tools",
               "approval": "? waiting for you", "error": "✗ request failed"}


def short_count(n: int) -> str:
    if n < 1000:
        return str(n)
    return f"{n / 1000:.1f}k" if n < 100_000 else f"{n // 1000}k"


def usage_text(u: Usage, *, short: bool = False) -> str:
    """`↑12.3k (8.0k cached) ↓900 (640 reasoning) tokens · $0.0123`: the parts that apply;
    short (a narrow terminal): `↑12.3k ↓900 · $0.0123`."""
    text = f"↑{short_count(u.input_tokens)}"
    if u.cached_tokens and not short:
        text += f" ({short_count(u.cached_tokens)} cached)"
    text += f" ↓{short_count(u.output_tokens)}"
    if u.reasoning_tokens and not short:
        text += f" ({short_count(u.reasoning_tokens)} reasoning)"
    text += "" if short else " tokens"
    if u.cost is not None:
        text += f" · ${u.cost:.4f}" if u.cost < 1 else f" · ${u.cost:.2f}"
    return text


CONTEXT_WARN = 0.85  # the context is shown as a warning from this fraction on


def context_text(c: ContextUsed, *, short: bool = False) -> str:
    """`ctx 42% of 128k` (`42%` narrow); `ctx 12.3k` when the window is not known."""
    if c.window is None:
        return f"ctx {short_count(c.tokens)}"
    percent = f"{min(999, round(100 * c.tokens / c.window))}%"
    return percent if short else f"ctx {percent} of {short_count(c.window)}"


class StatusFooter(Widget):
    model: reactive[str] = reactive("offline")
    # The session's usage = what earlier runs of it recorded (a resumed session) + this run's.
    base_usage: reactive[Usage] = reactive(Usage)
    usage: reactive[Usage] = reactive(Usage)
    state: reactive[str] = reactive("idle")
    session_id: reactive[str | None] = reactive(None)
    label: reactive[str | None] = reactive(None)  # active agent / prompt
    context: reactive[ContextUsed | None] = reactive(None)  # of the last request
    mode: reactive[str] = reactive("ask")  # the approval mode (core/modes.py)

    def watch_mode(self, mode: str) -> None:
        self.set_class(mode == "yolo", "-yolo")
    keyboard: reactive[str] = reactive("message box")  # the widget that gets the next key

    def render(self) -> Content:
        # Narrow (an 80-column terminal): tighter separators, the short usage form, ctrl+x as
        # ^x and no session id, so that the keys still fit beside the model.
        compact = self.size.width < COMPACT_BELOW
        left_c = self._left(short=compact, compact=compact)
        if left_c.cell_length > self.size.width:
            left_c = self._left(short=True, compact=True)
        # Keys on the right, as many as fit: the state and model matter more.
        # The keys part is set apart from the state by a separator (always when wide, when
        # they would be close on a narrow screen): "waiting for you▸ approval" ran together.
        sep = " │ " if compact else "  │  "
        # (narrow: a plain gap of one will do, so that every idle key still fits at 80)
        room = self.size.width - left_c.cell_length - (1 if compact else len(sep))
        keyboard = SHORT_NAMES.get(self.keyboard, self.keyboard) if compact else self.keyboard
        right_c = Content.assemble(("▸" if compact else "▸ ", "$text-muted"),
                                   (keyboard, "bold"), (" " if compact else sep, "$text-muted"))
        state = self.state
        if state == "approval" and self.keyboard != "approval":
            state = "approval-away"
        for key, label, action in KEYS.get(state, KEYS["idle"]):
            key = in_force(key, action)
            if compact:
                key = key.replace("ctrl+", "^")
            text = Content.assemble((key, "bold $footer-key-foreground"), " ", label,
                                    " " if compact else "  ")
            if action:
                text = text.stylize(f"@click={action}")
            if right_c.cell_length + text.cell_length > room:
                break
            right_c += text
        gap = self.size.width - left_c.cell_length - right_c.cell_length
        if compact:
            return left_c + Content(" " * max(1, gap)) + right_c
        # Wide: always "state … │  ▸ who gets the key  │  keys", each part its own.
        middle = Content(" " * max(0, gap - len(sep))) + Content.styled(sep, "$text-muted")
        return left_c + middle + right_c

    def _left(self, *, short: bool, compact: bool = False) -> Content:
        sep = (" │ " if compact else "  │  ", "$text-muted")
        left: list[str | tuple[str, str]] = [(" ◆ ", "$accent"), (self.model, "bold")]
        if self.mode != "ask":  # the default is not shown; any other mode always is
            style = "bold reverse" if self.mode == "yolo" else "bold $text-warning"
            left += [sep, (f" {self.mode.upper()} " if self.mode == "yolo" else self.mode,
                           style)]
        if self.label:
            left += [sep, (self.label, "$text-secondary")]
        left += [sep, (usage_text(self.base_usage + self.usage, short=short), "$text-muted")]
        if self.context is not None:
            full = (self.context.fraction or 0) >= CONTEXT_WARN
            left += [sep, (context_text(self.context, short=short),
                           "$text-warning" if full else "$text-muted")]
        if self.session_id and not compact:  # (narrow: the keys matter more)
            left += [sep, (f"session {self.session_id}", "$text-muted")]
        if STATE_LABEL.get(self.state):
            left += [sep, (STATE_LABEL[self.state], "$text-warning")]
        return Content.assemble(*left)
