"""Shown at the top of the transcript when no API key is configured: which model is active
(offline), which tools were found, and how to set up a real provider. Dismiss with the button
or Esc; it never blocks typing."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Button, Markdown, Static

from tuiapp.config import Config
from tuiapp.tools.model import BrokenTool, ToolSpec

TOOLS_SHOWN = 12

SETUP = """\
**To use a real model**, give kep a key and pick a model:

- OpenAI: `export OPENAI_API_KEY=…` then `kep --model openai/gpt-5-mini`
- Anthropic: `export ANTHROPIC_API_KEY=…` then `kep --model anthropic/claude-sonnet-4-5`
- OpenRouter: `export OPENROUTER_API_KEY=…` then `kep --model openrouter/VENDOR/MODEL`
- Local servers, no key: `kep --model ollama/llama3.2` (also `lmstudio/…`, `vllm/…`, \
`llamacpp/…`)

Keys can also live in the project's `.env`. Make a model the default with \
`model = "openai/gpt-5-mini"` in `kep.toml`, or switch now: **ctrl+p → Switch model**. Any \
other OpenAI- or Anthropic-compatible server: a `[providers.NAME]` table with `api`, \
`base_url` and `api_key_env`.
"""


class FirstRunPanel(Vertical):
    def __init__(self, config: Config) -> None:
        super().__init__(id="first-run")
        self.config = config

    def compose(self) -> ComposeResult:
        yield Static(Content.assemble(("Welcome to kep", "bold $text-primary"),
                                      ("  ·  no API key found", "$text-muted")),
                     classes="first-run-title")
        yield Static(self._model_line("readfile README.md"), classes="first-run-model")
        yield Static(Content("Looking for tools…"), classes="first-run-tools")
        yield Markdown(SETUP, classes="first-run-setup")
        files = ", ".join(str(f) for f in self.config.files) or "none yet"
        with Horizontal(classes="first-run-footer"):
            yield Static(Content.assemble(("config files read: ", "$text-muted"), files),
                         classes="first-run-config")
            yield Button("Got it  esc", compact=True, variant="primary", id="first-run-close")

    @staticmethod
    def _model_line(example: str) -> Content:
        return Content.assemble(
            "Active model: ", ("offline", "bold"),
            " — kep's built-in model: no network, no key. Name a tool and it runs it: ",
            (example, "bold $text-accent"), ".")

    def show_tools(self, entries: Sequence[ToolSpec | BrokenTool]) -> None:
        tools = sorted(e.name for e in entries if isinstance(e, ToolSpec))
        example = "readfile README.md" if "readfile" in tools or not tools else f"{tools[0]} …"
        self.query_one(".first-run-model", Static).update(self._model_line(example))
        broken = [e for e in entries if isinstance(e, BrokenTool)]
        if not tools and not broken:
            text = Content("No tools found. Add executables to prompts/functions/ (kep init "
                           "copies the built-in ones there).")
        else:
            names = ", ".join(tools[:TOOLS_SHOWN]) + (
                f" and {len(tools) - TOOLS_SHOWN} more" if len(tools) > TOOLS_SHOWN else "")
            parts: list[str | tuple[str, str]] = [
                f"Tools found ({len(tools)}): ", (names or "none", "$text-success")]
            if broken:
                parts += ["   ", (f"{len(broken)} broken", "bold $text-error"),
                          (" (ctrl+f shows why)", "$text-muted")]
            text = Content.assemble(*parts)
        self.query_one(".first-run-tools", Static).update(text)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.remove()
