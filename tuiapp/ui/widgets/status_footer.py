"""The bottom line: model, session tokens, active agent/prompt, state, and the keys that
matter right now (each one clickable)."""

from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

# (key shown, label, action) per state. The full list is in the README and under ctrl+p → Keys.
KEYS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "idle": (("enter", "send", ""), ("ctrl+p", "commands", "app.command_palette"),
             ("ctrl+f", "functions", "app.toggle_functions"),
             ("ctrl+t", "panes", "app.toggle_panes"), ("ctrl+q", "quit", "app.quit")),
    "streaming": (("esc", "interrupt", "app.interrupt"),
                  ("ctrl+p", "commands", "app.command_palette")),
    "tools": (("esc", "cancel tools", "app.interrupt"), ("ctrl+t", "panes", "app.toggle_panes"),
              ("ctrl+p", "commands", "app.command_palette")),
    "approval": (("y", "allow", ""), ("n", "deny", ""), ("a a", "always", ""),
                 ("e", "edit", ""), ("Y Y/N N", "all", ""), ("esc", "message box", "")),
    "error": (("ctrl+r", "retry", "app.retry"), ("enter", "send", ""),
              ("ctrl+p", "commands", "app.command_palette")),
}
STATE_LABEL = {"idle": "", "streaming": "● answering", "tools": "⌛ running tools",
               "approval": "? waiting for you", "error": "✗ request failed"}


def short_count(n: int) -> str:
    if n < 1000:
        return str(n)
    return f"{n / 1000:.1f}k" if n < 100_000 else f"{n // 1000}k"


class StatusFooter(Widget):
    model: reactive[str] = reactive("offline")
    tokens: reactive[tuple[int, int]] = reactive((0, 0))
    state: reactive[str] = reactive("idle")
    session_id: reactive[str | None] = reactive(None)
    label: reactive[str | None] = reactive(None)  # active agent / prompt

    def render(self) -> Content:
        tin, tout = self.tokens
        left: list[str | tuple[str, str]] = [(" ◆ ", "$accent"), (self.model, "bold")]
        if self.label:
            left += [("  │  ", "$text-muted"), (self.label, "$text-secondary")]
        left += [("  │  ", "$text-muted"),
                 (f"↑{short_count(tin)} ↓{short_count(tout)} tokens", "$text-muted")]
        if self.session_id:
            left += [("  │  ", "$text-muted"), (f"session {self.session_id}", "$text-muted")]
        if STATE_LABEL.get(self.state):
            left += [("  │  ", "$text-muted"), (STATE_LABEL[self.state], "$text-warning")]
        left_c = Content.assemble(*left)
        # Keys on the right, as many as fit: the state and model matter more.
        room = self.size.width - left_c.cell_length - 2
        right_c = Content("")
        for key, label, action in KEYS.get(self.state, KEYS["idle"]):
            text = Content.assemble((key, "bold $footer-key-foreground"), " ", label, "  ")
            if action:
                text = text.stylize(f"@click={action}")
            if right_c.cell_length + text.cell_length > room:
                break
            right_c += text
        gap = max(1, self.size.width - left_c.cell_length - right_c.cell_length)
        return left_c + Content(" " * gap) + right_c
